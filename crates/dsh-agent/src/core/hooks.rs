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
use dsh_tools::CancellationToken;
use std::future::Future;
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
