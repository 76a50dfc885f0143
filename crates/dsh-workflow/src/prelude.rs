//! Installing the script's globals: the JavaScript prelude (`prelude.js`)
//! is evaluated under a file name of its own and called with the native
//! functions, which therefore never become globals.

use std::rc::Rc;

use rquickjs::{Ctx, Function, Value};

use crate::eval_options::global_script;
use crate::natives::Host;

/// The prelude's source: one function expression.
const SOURCE: &str = include_str!("prelude.js");

/// The file name of the prelude in stack traces (frames in it are dropped).
pub(crate) const FILE: &str = "dsh-workflow:prelude";

/// Globals QuickJS adds that are not ECMAScript and that the script has no
/// use for (timing, encoding helpers, the microtask hook, a web class).
const REMOVED_GLOBALS: &[&str] = &[
    "performance",
    "queueMicrotask",
    "atob",
    "btoa",
    "navigator",
    "DOMException",
];

/// Removes the extra globals, installs the hooks with `args` (JSON text,
/// normally an object)
/// and returns the prelude's `settle(id, value)` function.
pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    host: &Rc<Host>,
    args: &str,
    max_agents: usize,
) -> rquickjs::Result<Function<'js>> {
    let globals = ctx.globals();
    for name in REMOVED_GLOBALS {
        globals.remove(*name)?;
    }
    let prelude: Function = ctx.eval_with_options(SOURCE, global_script(FILE, true))?;

    let agent_host = host.clone();
    let agent = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>,
              prompt: String,
              label: Option<String>,
              phase: Option<String>,
              schema: Option<String>,
              provider: Option<String>,
              model: Option<String>| {
            agent_host
                .agent(&ctx, prompt, label, phase, schema, provider, model)
                .map(|id| id as f64)
        },
    )?;
    let log_host = host.clone();
    let log = Function::new(ctx.clone(), move |line: String| log_host.log(line))?;
    let args: Value = ctx.json_parse(args)?;
    prelude.call((agent, log, max_agents as f64, args))
}
