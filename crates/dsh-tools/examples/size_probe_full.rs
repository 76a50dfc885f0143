//! temporary
use dsh_tools::*;
use std::sync::Arc;
fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let args: Vec<String> = std::env::args().collect();
    rt.block_on(async {
        let set = sdk_tools(ToolsConfig::new("/tmp/x"));
        let min = sdk_minimal_tools(ToolsConfig::new("/tmp/x"));
        let ctx = ToolContext { session_id: "s".into(), call_id: "c".into(), cwd: ".".into(), workspace: ".".into(), mode: PermissionMode::DangerFullAccess, host: Arc::new(NullHost), state: Arc::new(SessionTools::new()), cancel: CancellationToken::new() };
        for name in set.names() { let o = set.run(name, &args[1], ctx.clone()).await; println!("{}", o.text_content()); }
        for name in min.names() { let o = min.run(name, &args[1], ctx.clone()).await; println!("{}", o.text_content()); }
        let _ = reqwest::get(&args[1]).await;
    });
    if args.len() > 5 { let _ = sandbox_exec_main(&[]); }
}
