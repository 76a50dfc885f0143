//! One turn: steps of a model call and its tool calls, until the model
//! stops calling tools and nothing waits for the next step.

use super::shared::Core;
use super::state::interrupted;
use super::{attempt, calls, context};
use dsh_protocol::catalog::TurnEndReason;
use dsh_session::UserMessage;

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
        let mut state = core.state();
        state.end_step(turn, step);
        if cancel.is_cancelled() {
            return interrupted();
        }
        if !ran.any && state.next_step.is_empty() {
            return TurnEndReason::Completed;
        }
        // A tool asked for the turn to end (a workflow child's structured
        // output is recorded).
        if ran.end_turn {
            return TurnEndReason::Completed;
        }
        // What arrived during the step joins the next one: claimed between
        // the two steps, as the official runtime does.
        claimed = state.claim_next_step();
    }
}
