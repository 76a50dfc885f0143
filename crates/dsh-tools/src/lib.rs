//! The model-visible tools of the DeepSeek Harness runtime.
//!
//! [`sdk_tools`] builds the tool library of the `sdk` profile (`bash`,
//! `read`, `write`, `edit`, `glob`, `grep`, `read_image`, `todo_write`,
//! `job_list`, `job_output`, `job_kill`, `web_fetch`); the agent adds the
//! tools that need its own services (`working_directory`, subagents, …).
//! [`sdk_minimal_tools`] builds the `sdk-minimal` set (a persistent
//! `bash` and `read_image`).
//!
//! A call gets the raw argument string as streamed by the model and a
//! [`ToolContext`]; it returns a [`ToolOutput`] (content blocks, `isError`,
//! optional `meta` and `error`) and never panics on bad input: invalid JSON
//! or schema violations become error results naming the parameter.
//! Tools append session events (`job/*`, `todo/write`, `approval/*`)
//! through the agent's [`ToolHost`]. Per-session state (files read, jobs,
//! todo list, persistent shell) lives in [`SessionTools`].
//!
//! `bash` commands run confined by Landlock: the runtime executable is
//! re-executed as a launcher (`dsh __sandbox-exec …`, see
//! [`sandbox_exec_main`]) that restricts itself and then becomes
//! `bash`. Modes the kernel cannot enforce fail closed.
//!
//! # Wiring the launcher into a binary
//!
//! The binary that builds the tool set (by default [`ToolsConfig::new`]
//! uses `std::env::current_exe()` as the launcher) must dispatch the
//! launcher argument first thing in `main`, before any thread, runtime or
//! stdio redirection is set up:
//!
//! ```text
//! fn main() -> std::process::ExitCode {
//!     let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
//!     if args.get(1).is_some_and(|a| a == dsh_tools::SANDBOX_EXEC_ARG) {
//!         return dsh_tools::sandbox_exec_main(&args[2..]);
//!     }
//!     // … the normal runtime …
//! }
//! ```
//!
//! `examples/sandbox_exec.rs` is exactly that, and is the launcher the
//! crate's tests use.
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `mode`, `host`, `output`, `regular`, `paths`, `lines`, `diffs`,
//!    `html`, `web_guard`, `foreign_job` — the permission mode; the sink
//!    for tool events; what a call produces; regular files read to a
//!    bound; path resolution; line splitting; the hunks `edit` and `write`
//!    report; HTML to text; `web_fetch`'s network guard; jobs run outside
//!    this library
//! 2. `sandbox`, `beneath`, `args` — the confinement of `bash`; files
//!    opened beneath the workspace root; arguments checked against a schema
//! 3. `jobs`, `config` — background shell jobs; the settings a tool set
//!    shares
//! 4. `shell` — the persistent `bash` of `sdk-minimal`
//! 5. `session` — per-session tool state
//! 6. `context` — everything a call may use besides its arguments
//! 7. `approval`, `toolset` — requests for a wider sandbox; the `Tool`
//!    trait and the tool set
//! 8. `write_guard` — the rules `write` and `edit` enforce before touching
//!    a file
//! 9. `tools` — the model-visible tools, one module each

mod approval;
mod args;
mod beneath;
mod config;
mod context;
mod diffs;
mod foreign_job;
mod host;
mod html;
mod jobs;
mod lines;
mod mode;
mod output;
mod paths;
mod regular;
mod sandbox;
mod session;
mod shell;
mod tools;
mod toolset;
mod web_guard;
mod write_guard;

pub use approval::{
    ApprovalQuestion, Approvals, Approver, ApproverAnswer, ApproverFuture, CallHints,
    DEFAULT_APPROVAL_TIMEOUT, ask_for_call, check_call,
};
pub use args::check_arguments;
pub use config::{DEFAULT_BASH_TIMEOUT, DEFAULT_SHELL_TIMEOUT, DEFAULT_WEB_TIMEOUT, ToolsConfig};
pub use context::{EditorFiles, OutputTap, ToolContext};
pub use dsh_protocol::catalog::ToolSpec;
pub use dsh_protocol::catalog::{Todo, TodoStatus};
pub use dsh_protocol::catalog::{ToolError, ToolErrorCode};
pub use foreign_job::{ForeignEnd, ForeignJob};
pub use host::{JobNotice, NullHost, ToolHost};
pub use jobs::render::OUTPUT_DISPLAY_LIMIT;
pub use jobs::{
    DEFAULT_SPILL_MAX_BYTES, DEFAULT_SPILL_SESSION_MAX_BYTES, KEEP_TOOL_OUTPUT_VAR,
    SPILL_MAX_BYTES_VAR, SPILL_SESSION_MAX_BYTES_VAR, SpillLimits,
};
pub use mode::{ParsePermissionModeError, PermissionMode};
pub use output::{ToolOutput, text_block, unknown_tool};
pub use regular::{DEFAULT_FILE_MAX_BYTES, FILE_MAX_BYTES_VAR, ReadRegularError, read_regular};
pub use sandbox::{
    AbiMaxError, HiddenEnv, LANDLOCK_ABI_MAX_VAR, LandlockSupport, Launcher, MIN_LANDLOCK_ABI,
    NETWORK_LANDLOCK_ABI, NetworkAccess, SANDBOX_EXEC_ARG, SCOPE_LANDLOCK_ABI, SandboxConfig,
    SandboxProbe, parse_abi_max, sandbox_exec_main, sandbox_exec_with,
};
pub use session::SessionTools;
pub use tokio_util::sync::CancellationToken;
pub use tools::read_image::image_block;
pub use toolset::{Tool, ToolFuture, ToolSet};

use std::sync::Arc;

/// The tools of the `sdk` profile that this crate implements: `bash`,
/// `edit`, `glob`, `grep`, `job_kill`, `job_list`, `job_output`, `read`,
/// `read_image`, `todo_write`, `web_fetch` and `write`.
pub fn sdk_tools(config: ToolsConfig) -> ToolSet {
    let config = Arc::new(config);
    let mut set = ToolSet::new();
    set.insert(Arc::new(tools::Typed(tools::bash::Bash::new(
        config.clone(),
    ))));
    set.insert(Arc::new(tools::Typed(tools::edit::Edit::new(
        config.file_max_bytes,
    ))));
    set.insert(Arc::new(tools::Typed(tools::glob::Glob::new(
        config.clone(),
    ))));
    set.insert(Arc::new(tools::Typed(tools::grep::Grep::new(
        config.clone(),
    ))));
    set.insert(Arc::new(tools::Typed(tools::jobs::JobKill::new())));
    set.insert(Arc::new(tools::Typed(tools::jobs::JobList::new())));
    set.insert(Arc::new(tools::Typed(tools::jobs::JobOutput::new())));
    set.insert(Arc::new(tools::Typed(tools::read::Read::new(
        config.file_max_bytes,
    ))));
    set.insert(Arc::new(tools::Typed(tools::read_image::ReadImage::new(
        config.clone(),
    ))));
    set.insert(Arc::new(tools::Typed(tools::todo_write::TodoWrite::new())));
    set.insert(Arc::new(tools::Typed(tools::write::Write::new(
        config.file_max_bytes,
    ))));
    set.insert(Arc::new(tools::Typed(tools::web_fetch::WebFetch::new(
        config,
    ))));
    set
}

/// The tools of the `sdk-minimal` profile that this crate implements: a
/// persistent `bash` taking only `command`, and `read_image`.
pub fn sdk_minimal_tools(config: ToolsConfig) -> ToolSet {
    let config = Arc::new(config);
    let mut set = ToolSet::new();
    set.insert(Arc::new(tools::Typed(tools::shell::PersistentBash::new(
        config.clone(),
    ))));
    set.insert(Arc::new(tools::Typed(tools::read_image::ReadImage::new(
        config,
    ))));
    set
}
