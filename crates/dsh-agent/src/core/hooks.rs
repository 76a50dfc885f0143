//! The fixed points where the core calls its features.
//!
//! A feature implements [`Feature`] (every method does nothing by default)
//! and the builder lists it for the profiles that have it; the core calls
//! the list in that order through [`Hooks`]. The core knows no feature:
//! it only knows these points. Methods that receive the locked
//! [`AgentState`] run inside the state change they belong to (one lock,
//! one event sequence); the others are called with no lock held.

use super::shared::Core;
use super::state::AgentState;
use crate::prose::Section;
use dsh_protocol::catalog::{Event, TurnEndReason, Usage};
use dsh_session::UserMessage;
use dsh_session::store::ResumeFacts;
use dsh_tools::{CancellationToken, ToolOutput};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

/// A boxed future borrowing from its feature and the core.
pub(crate) type HookFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Where a feature's user message joins a step's context (see
/// [`Feature::compose`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ContextSlot {
    /// Right after the step's claimed messages.
    AfterClaimed,
    /// Right after the runtime-context snapshot.
    AfterRuntimeContext,
}

/// A tool call as the features see it before and after it runs.
pub(crate) struct CallView<'a> {
    /// Its turn.
    pub turn: u32,
    /// Its call id.
    pub call_id: &'a str,
    /// The tool's name.
    pub name: &'a str,
    /// The argument text it runs with.
    pub arguments: &'a str,
    /// The session's directory when it started.
    pub cwd: &'a Path,
}

/// What a feature says of a tool call about to run.
pub(crate) enum Gate {
    /// Let it run, with these arguments when they were rewritten.
    Run(Option<String>),
    /// Ask the client first, with this reason (and these arguments when
    /// they were rewritten).
    Ask(String, Option<String>),
    /// Do not run it: this is its result.
    Refuse(ToolOutput),
    /// Do not run it, and end the turn (`aborted`, kind `hook`) with this
    /// reason once the step's results are recorded.
    Stop(String),
}

/// What a feature says once a tool call ran.
#[derive(Default)]
pub(crate) struct AfterTool {
    /// A notice for the model, delivered right after the result.
    pub notice: Option<UserMessage>,
    /// End the turn with this reason once the step's results are
    /// recorded.
    pub stop: Option<String>,
}

/// What a feature says when the model ended its turn.
pub(crate) enum Stopping {
    /// Let the turn complete.
    End,
    /// Keep working: this message joins the next step.
    Continue(UserMessage),
    /// End the turn `aborted` (kind `hook`) with this reason.
    Abort(String),
}

/// A feature's entry points into the agent loop.
pub(crate) trait Feature: Send + Sync {
    /// A fork's inherited event, as the child's log takes it over.
    fn inherited(&self, _state: &mut AgentState, _event: &Event) {}

    /// A stored session's state is being rebuilt from `facts`.
    fn resumed(&self, _state: &mut AgentState, _facts: &ResumeFacts) {}

    /// The state was rebuilt (a resume, or a fork's inherited turns): the
    /// history the model already saw is in place.
    fn restored(&self, _state: &mut AgentState) {}

    /// Before a step opens, with the messages it will add: may rewrite the
    /// history (compaction). `Some(reason)` ends the turn.
    fn before_step<'a>(
        &'a self,
        _core: &'a Core,
        _turn: u32,
        _pending: &'a [UserMessage],
        _cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Option<TurnEndReason>> {
        Box::pin(std::future::ready(None))
    }

    /// The model refused the request as over its context window.
    /// `Ok(true)` when the history changed and the attempt is worth making
    /// again; `Err(reason)` ends the turn.
    fn window_exceeded<'a>(
        &'a self,
        _core: &'a Core,
        _turn: u32,
        _cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Result<bool, TurnEndReason>> {
        Box::pin(std::future::ready(Ok(false)))
    }

    /// The model replied to step `step` of `turn` (its `assistant/message`
    /// is recorded), with the provider's `usage` if it reported one.
    fn replied(
        &self,
        _core: &Core,
        _state: &mut AgentState,
        _turn: u32,
        _step: u32,
        _usage: Option<&Usage>,
    ) {
    }

    /// A user message of this feature for `slot` of a step's context, if
    /// it has something new to say.
    fn compose(
        &self,
        _core: &Core,
        _state: &mut AgentState,
        _slot: ContextSlot,
    ) -> Option<UserMessage> {
        None
    }

    /// Sections this feature adds to the runtime-context snapshot.
    fn runtime_sections(&self, _core: &Core, _sections: &mut Vec<Section>) {}

    /// A tool call of the running turn got its result (recorded, and its
    /// follow-up delivered); `arguments` as the model wrote them.
    fn tool_finished(&self, _state: &mut AgentState, _name: &str, _arguments: &str) {}

    /// The history was rewritten (a compaction): forget what was sent of
    /// anything the model no longer sees.
    fn history_rewritten(&self, _state: &mut AgentState) {}

    /// A turn began; `prompt` is the `next-turn` message it claimed.
    fn turn_started(&self, _state: &mut AgentState, _prompt: Option<&UserMessage>) {}

    /// A turn ended (its `turn/end` is recorded).
    fn turn_ended(&self, _state: &mut AgentState, _reason: &TurnEndReason) {}

    /// The agent went idle (`idle` announced); its waiters are released
    /// after every feature's `settled`. A child hands its news on here.
    fn settled(&self, _core: &Core) {}

    /// The agent went idle and its waiters were released: a feature may
    /// begin more work (a goal's next round).
    fn idle(&self, _core: &Core) {}

    /// The agent is being disposed: its open turn was closed, its inboxes
    /// are not yet cancelled.
    fn disposed(&self, _state: &mut AgentState) {}

    /// A tool call of turn `call.turn` is about to run (its `tool/call` is
    /// recorded): it may be let through (its arguments rewritten), asked
    /// about, refused, or end the turn. The first feature that does not
    /// let it run decides.
    fn before_tool<'a>(
        &'a self,
        _core: &'a Core,
        _call: &'a CallView<'a>,
        _cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Gate> {
        Box::pin(std::future::ready(Gate::Run(None)))
    }

    /// A tool call ran with `output`, which is not recorded yet.
    fn after_tool<'a>(
        &'a self,
        _core: &'a Core,
        _call: &'a CallView<'a>,
        _output: &'a ToolOutput,
        _cancel: &'a CancellationToken,
    ) -> HookFuture<'a, AfterTool> {
        Box::pin(std::future::ready(AfterTool::default()))
    }

    /// The model ended turn `turn` (no tool call, nothing waiting for the
    /// next step): the turn may go on, or end another way.
    fn stopping<'a>(
        &'a self,
        _core: &'a Core,
        _turn: u32,
        _cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Stopping> {
        Box::pin(std::future::ready(Stopping::End))
    }

    /// The history of turn `turn` is about to be compacted (`trigger`:
    /// `auto` when the window filled, `manual` when asked for).
    fn compacting<'a>(
        &'a self,
        _core: &'a Core,
        _turn: u32,
        _trigger: &'static str,
        _cancel: &'a CancellationToken,
    ) -> HookFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }

    /// A tool of the agent puts a question to the client (`approval/asked`
    /// is recorded, no rule decided it, the client answers approvals).
    /// Called with no lock held; must not wait.
    fn approval_asked(&self, _core: &Core, _tool: &str, _reason: &str) {}

    /// The session is about to close (`reason`: `prompt_input_exit` at end
    /// of input, `other` otherwise); its agent is not disposed yet.
    fn closing<'a>(&'a self, _core: &'a Core, _reason: &'a str) -> HookFuture<'a, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// The features of one agent, called in the builder's order.
#[derive(Clone, Default)]
pub(crate) struct Hooks(Arc<[Arc<dyn Feature>]>);

impl Hooks {
    /// Hooks calling `features` in order.
    pub fn new(features: Vec<Arc<dyn Feature>>) -> Self {
        Self(features.into())
    }

    /// The features, in order.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Feature> {
        self.0.iter().map(|f| &**f)
    }
}
