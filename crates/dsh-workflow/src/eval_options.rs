//! How the engine evaluates global code (the prelude, the script).

use rquickjs::context::EvalOptions;

/// Options to evaluate global code from the file `filename`.
pub(crate) fn global_script(filename: &str, strict: bool) -> EvalOptions {
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = strict;
    options.promise = false;
    options.filename = Some(filename.to_owned());
    options
}
