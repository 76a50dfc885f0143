//! How a workflow's child reports to the run that started it: its news
//! goes to the run ([`Report`], a [`ChildSink`]) instead of the parent's
//! model, and a child asked for structured data reports it through its own
//! `structured_output` tool: the value is checked, kept for the run, and
//! the child's turn ends after the step that recorded it.

use super::spec;
use crate::core::{AgentTool, ChildNews, ChildSink, Core, HookFuture, ToolCall, ToolOutcome};
use crate::tool_args::{self, InvalidArgs};
use dsh_protocol::catalog::ToolSpec;
use dsh_protocol::notifications::SubagentStopReason;
use dsh_session::TreeNotice;
use dsh_tools::ToolOutput;
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::sync::mpsc;

/// A workflow child's news: how its turn ended and what it answered.
#[derive(Debug)]
pub(crate) struct ChildReport {
    /// How the turn ended.
    pub stop: SubagentStopReason,
    /// The text of its last reply (empty when the turn did not complete).
    pub text: String,
    /// Its structured output, when it reported one.
    pub structured: Option<Value>,
}

/// Where a workflow's child reports when it settles.
pub(crate) struct Report {
    /// Receives the child's news.
    tx: mpsc::UnboundedSender<ChildReport>,
    /// What the child recorded through `structured_output`.
    structured: Arc<Mutex<Option<Value>>>,
}

impl Report {
    /// A report sending to `tx`, and the tool through which the child
    /// records a value matching `schema` (when the run asked for one).
    pub fn new(
        tx: mpsc::UnboundedSender<ChildReport>,
        schema: Option<Value>,
    ) -> (Arc<Self>, Option<Arc<dyn AgentTool>>) {
        let structured = Arc::new(Mutex::new(None));
        let tool = schema.map(|schema| {
            Arc::new(StructuredOutput {
                schema,
                structured: Arc::clone(&structured),
            }) as Arc<dyn AgentTool>
        });
        (Arc::new(Self { tx, structured }), tool)
    }
}

impl ChildSink for Report {
    fn settled(&self, parent: &Core, _child: &Core, news: ChildNews) -> Result<(), ChildNews> {
        if self.tx.is_closed() {
            return Err(news);
        }
        let stop = news.finished.stop_reason;
        // The client still gets `subagent.finished`, through the parent.
        parent.state().announce(TreeNotice::Finished(news.finished));
        let structured = self
            .structured
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let _ = self.tx.send(ChildReport {
            stop,
            text: news.closing,
            structured,
        });
        Ok(())
    }
}

/// The `structured_output` tool of one child.
struct StructuredOutput {
    schema: Value,
    structured: Arc<Mutex<Option<Value>>>,
}

impl AgentTool for StructuredOutput {
    fn specs(&self) -> Vec<ToolSpec> {
        vec![spec::structured_output(&self.schema)]
    }

    fn call<'a>(&'a self, call: ToolCall<'a>) -> HookFuture<'a, ToolOutcome> {
        Box::pin(std::future::ready(self.record(call.arguments)))
    }
}

impl StructuredOutput {
    /// Checks and keeps one value; the turn ends once it is kept.
    fn record(&self, arguments: &str) -> ToolOutcome {
        let value = match serde_json::from_str::<Value>(tool_args::or_empty_object(arguments)) {
            Ok(value) => value,
            Err(err) => {
                return ToolOutput::from(InvalidArgs(format!("the arguments are not JSON: {err}")))
                    .into();
            }
        };
        if let Err(problems) = dsh_workflow::validate(&self.schema, &value) {
            return ToolOutput::from(InvalidArgs(problems)).into();
        }
        *self
            .structured
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(value);
        ToolOutcome {
            output: ToolOutput::text("Structured output recorded."),
            follow_up: None,
            end_turn: true,
        }
    }
}
