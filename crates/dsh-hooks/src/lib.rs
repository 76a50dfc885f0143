//! Command hooks for the DeepSeek Harness runtime, in the format of Claude
//! Code's `settings.json` (which Codex's `hooks.json` shares), so existing
//! hook scripts run unchanged.
//!
//! A [`HookSet`] holds the hooks of a session from its layered sources
//! ([`config`]); [`runner::matching`] picks the commands an event runs
//! (matchers by Claude Code's tool names, [`tools`]); [`runner::run_all`]
//! runs them at once, each bounded in time and output, in its own process
//! group, without the providers' credentials; [`decision::judge`] reads
//! what they decided by Claude Code's rules. The agent's `command_hooks`
//! feature calls these at the matching points of its loop and records
//! every run in the session log.
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `event`, `matcher`, `tools` — the events, matchers, and dsh's tools
//!    by Claude Code's names
//! 2. `config` — sources and their hooks
//! 3. `runner` — running an event's commands
//! 4. `decision` — what the runs decided

pub mod config;
pub mod decision;
pub mod event;
pub mod matcher;
pub mod runner;
pub mod tools;

pub use config::{HookSet, SessionHooks, SourceKind};
pub use decision::{Decision, Outcome};
pub use event::HookEvent;
pub use runner::{HookRun, RunEnv, RunStatus};
