//! The `workflow` tool's script engine: a JavaScript program that
//! orchestrates child agents, run in an embedded QuickJS (rquickjs) on a
//! thread of its own, with a CPU-time, a memory and a stack limit per run.
//!
//! The script is the body of an async function: it may `await` and
//! `return`. It sees only the hooks `agent(prompt, opts?)`,
//! `parallel(items)`, `pipeline(items, ...stages)`, `phase(title)`,
//! `log(...values)` (and `console.*`, which logs), and `args`; there is no
//! file system, network, process, module loader or timer. The host (the
//! agent runtime) answers each `agent()` call: [`Run`] hands it an
//! [`AgentCall`] and the host settles it with [`Run::settle`].
//!
//! A run is driven from async code:
//!
//! ```no_run
//! # async fn host() {
//! use dsh_workflow::{Event, Limits, Run, Script};
//! let script = Script {
//!     name: "wf".into(),
//!     source: "return await agent('hello')".into(),
//!     args: serde_json::json!({}),
//! };
//! let mut run = Run::start(script, Limits::default());
//! while let Some(event) = run.next().await {
//!     match event {
//!         Event::Agent(call) => run.settle(call.id, "the child's answer".into()),
//!         Event::Finished(result) => println!("{result:?}"),
//!         Event::Started | Event::Log(_) => {}
//!     }
//! }
//! # }
//! ```
//!
//! # Layers
//!
//! Layer 1 is the bottom; a module uses only those in its layer or below
//! (`dsh-repo-checks`' layering test holds this list to the code):
//!
//! 1. `schema`, `limits`, `eval_options` — the JSON-schema subset of
//!    structured output; the run's limits; how global code is evaluated
//! 2. `natives`, `result`, `errors` — the native hooks' side of agent calls
//!    and logs; the script's result as JSON; exceptions as error text
//! 3. `prelude` — the script's globals: the JavaScript prelude, called with
//!    the native hooks
//! 4. `engine` — the engine thread: the QuickJS runtime with its limits and
//!    the loop that runs the script's jobs and the host's answers

mod engine;
mod errors;
mod eval_options;
mod limits;
mod natives;
mod prelude;
mod result;
mod schema;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

pub use limits::{Limits, LimitsError};
pub use schema::validate;

/// A workflow script and its arguments.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The script's name, used in stack frames (`workflow:<name>:<line>:<col>`).
    pub name: String,
    /// The JavaScript source: the body of an async function.
    pub source: String,
    /// The arguments, visible to the script as `args`; an object (the host
    /// passes `{}` when there are none).
    pub args: serde_json::Value,
}

/// One `agent()` call of the script, for the host to run as a child agent.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentCall {
    /// The call's number in this run, from 1 in the order of the calls; the
    /// host answers with [`Run::settle`] and this id.
    pub id: u64,
    /// The child's task (never empty).
    pub prompt: String,
    /// A short label for displays (`opts.label`).
    pub label: Option<String>,
    /// The phase: `opts.phase`, or else the title of the last `phase()` call.
    pub phase: Option<String>,
    /// The JSON schema the child's structured output must satisfy
    /// (`opts.schema`, an object); see [`validate`].
    pub schema: Option<serde_json::Value>,
    /// The provider the child should use (`opts.provider`).
    pub provider: Option<String>,
    /// The model the child should use (`opts.model`).
    pub model: Option<String>,
}

/// What a run reports to the host, in order: [`Event::Started`] (unless the
/// script does not parse), any number of [`Event::Agent`] and
/// [`Event::Log`], then exactly one [`Event::Finished`].
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The script compiled and is running.
    Started,
    /// The script called `agent()`; answer with [`Run::settle`].
    Agent(AgentCall),
    /// One line of the script's `log()`/`console.*` output.
    Log(String),
    /// The run ended: the script's return value as JSON, or why it failed.
    Finished(Result<serde_json::Value, RunError>),
}

/// Why a run failed. The texts are meant for the model that wrote the
/// script; the host prefixes them with `Error: `.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The script is not valid JavaScript: the error and its position.
    #[error("workflow script does not parse: {0}")]
    Parse(String),
    /// The script threw, returned something that is not JSON, or could not
    /// go on.
    #[error("workflow run failed: {0}")]
    Failed(String),
    /// The script used up its CPU time.
    #[error(
        "workflow run failed: the script used more than {limit_ms} ms of CPU time (DSH_WORKFLOW_CPU_MS)"
    )]
    CpuLimit {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// The script used up its memory.
    #[error(
        "workflow run failed: the script ran out of memory (limit {limit_bytes} bytes, DSH_WORKFLOW_MEMORY_BYTES)"
    )]
    Memory {
        /// The limit, in bytes.
        limit_bytes: usize,
    },
    /// The host cancelled the run ([`Run::cancel`] or dropping the [`Run`]).
    #[error("workflow run cancelled")]
    Cancelled,
    /// The engine itself failed: the thread or the runtime could not start,
    /// or the engine panicked.
    #[error("workflow engine failed: {0}")]
    Engine(String),
}

impl RunError {
    /// Whether the script did not parse (nothing ran).
    pub fn is_parse(&self) -> bool {
        matches!(self, Self::Parse(_))
    }
}

/// A message from the host to the engine thread.
#[derive(Debug)]
enum Reply {
    /// The value of `agent()` call `id`.
    Settle { id: u64, value: serde_json::Value },
    /// Stop the run.
    Cancel,
}

/// A running workflow script.
///
/// [`Run::start`] starts the engine thread; the host reads events with
/// [`Run::next`] and answers agent calls with [`Run::settle`]. Dropping the
/// run cancels it without waiting for the thread.
#[derive(Debug)]
pub struct Run {
    /// Events from the engine thread.
    events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    /// Replies to the engine thread.
    replies: std::sync::mpsc::Sender<Reply>,
    /// Set by [`Run::cancel`]; the interrupt handler watches it.
    cancelled: Arc<AtomicBool>,
    /// Whether [`Event::Finished`] was handed out.
    finished: bool,
}

impl Run {
    /// Starts `script` on a new thread named `dsh-workflow`. If the thread
    /// cannot be spawned, the run's first event is
    /// `Finished(Err(RunError::Engine(..)))`.
    pub fn start(script: Script, limits: Limits) -> Run {
        let (event_tx, events) = tokio::sync::mpsc::unbounded_channel();
        let (replies, reply_rx) = std::sync::mpsc::channel();
        let cancelled = Arc::new(AtomicBool::new(false));
        if let Err(err) = engine::spawn(
            script,
            limits,
            event_tx.clone(),
            reply_rx,
            cancelled.clone(),
        ) {
            // The receiver is alive (it is in `events`), so this cannot fail.
            let _ = event_tx.send(Event::Finished(Err(RunError::Engine(format!(
                "could not start the engine thread: {err}"
            )))));
        }
        Run {
            events,
            replies,
            cancelled,
            finished: false,
        }
    }

    /// The next event; `None` once [`Event::Finished`] was returned.
    pub async fn next(&mut self) -> Option<Event> {
        if self.finished {
            return None;
        }
        let event = self.events.recv().await.unwrap_or_else(|| {
            Event::Finished(Err(RunError::Engine(
                "the engine thread ended without a result".to_owned(),
            )))
        });
        if matches!(event, Event::Finished(_)) {
            self.finished = true;
        }
        Some(event)
    }

    /// Settles `agent()` call `id` with `value`: the child's final text (a
    /// string), its structured output (an object), or `null` when the child
    /// failed. Unknown or already settled ids are ignored, and so is a
    /// settle after the run ended.
    pub fn settle(&self, id: u64, value: serde_json::Value) {
        let _ = self.replies.send(Reply::Settle { id, value });
    }

    /// Stops the script as soon as possible; the run then finishes with
    /// [`RunError::Cancelled`] (unless it had already finished).
    pub fn cancel(&self) {
        self.cancelled.store(true, Ordering::SeqCst);
        let _ = self.replies.send(Reply::Cancel);
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        if !self.finished {
            self.cancel();
        }
    }
}

#[cfg(test)]
mod tests;
