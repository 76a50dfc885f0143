//! temporary
fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().unwrap_or_else(|e| panic!("{e}"));
    let args: Vec<String> = std::env::args().collect();
    rt.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let r = reqwest::get(&args[1]).await; println!("{:?}", r.map(|r| r.status()));
        let v: serde_json::Value = serde_json::from_str(&args[1]).unwrap_or_default(); println!("{v}");
        let mut c = tokio::process::Command::new(&args[1]); let _ = c.spawn();
    });
}
