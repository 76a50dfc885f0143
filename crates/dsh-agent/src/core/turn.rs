//! One turn: steps of a model call and its tool calls, until the model
//! stops calling tools and nothing waits for the next step.

use super::hooks::Stopping;
use super::shared::Core;
use super::state::{Delivery, interrupted};
use super::{attempt, calls, context};
use dsh_protocol::catalog::{AbortReason, TurnEndReason};
use dsh_session::UserMessage;
use dsh_tools::CancellationToken;

/// Runs the steps of turn `turn` over the `claimed` messages and returns the
/// `turn/end` reason. `turn/end` itself is appended by the caller.
pub(super) async fn run(core: &Core, turn: u32, claimed: Vec<UserMessage>) -> TurnEndReason {
    if claimed.is_empty() {
        return TurnEndReason::Completed;
    }
    let mut claimed = claimed;
    let mut step = 0u32;
    let cancel = core.state().turn_cancel();
    loop {
        step += 1;
        // The features (compaction) act before the step opens, with what
        // the step will add counted in.
        for feature in core.hooks.iter() {
            if let Some(reason) = feature.before_step(core, turn, &claimed, &cancel).await {
                return reason;
            }
        }
        // MCP servers start on the first step that needs their tools.
        let mcp = match &core.mcp {
            Some(servers) => Some(servers.roster().await),
            None => None,
        };
        let request = {
            let mut state = core.state();
            state.set_mcp(&core.roster, mcp);
            state.start_step(turn, step);
            // Pre-step barrier.
            state.log.flush();
            if let Some(reason) = state.log_failure() {
                state.end_step(turn, step);
                return reason;
            }
            let request = context::prepare_request(
                core,
                &mut state,
                turn,
                step,
                std::mem::take(&mut claimed),
            );
            if let Some(reason) = state.log_failure() {
                state.end_step(turn, step);
                return reason;
            }
            request
        };
        let reply = match attempt::reply(core, turn, step, request, &cancel).await {
            Ok(reply) => reply,
            Err(reason) => return reason,
        };
        let ran = match calls::run(core, turn, step, &reply, &cancel).await {
            Ok(ran) => ran,
            Err(reason) => return reason,
        };
        let done = {
            let mut state = core.state();
            state.end_step(turn, step);
            !ran.any && state.next_step.is_empty()
        };
        if cancel.is_cancelled() {
            return interrupted();
        }
        if done {
            // The model is done: the features may keep it working.
            match stopping(core, turn, &cancel).await {
                Stopping::End => return TurnEndReason::Completed,
                Stopping::Abort(reason) => {
                    return TurnEndReason::Aborted {
                        reason: AbortReason::Hook { reason },
                    };
                }
                Stopping::Continue(message) => {
                    let mut state = core.state();
                    state.deliver(message, Delivery::Notice, None);
                    claimed = state.claim_next_step();
                    continue;
                }
            }
        }
        // A tool asked for the turn to end (a workflow child's structured
        // output is recorded).
        if ran.end_turn {
            return TurnEndReason::Completed;
        }
        // What arrived during the step joins the next one: claimed between
        // the two steps, as the official runtime does.
        claimed = core.state().claim_next_step();
    }
}

/// What the features say when the model ended turn `turn`: the first that
/// does not let it end decides.
async fn stopping(core: &Core, turn: u32, cancel: &CancellationToken) -> Stopping {
    for feature in core.hooks.iter() {
        match feature.stopping(core, turn, cancel).await {
            Stopping::End => {}
            other => return other,
        }
    }
    Stopping::End
}
