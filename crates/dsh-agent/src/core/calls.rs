//! A reply's tool calls: run one after another in model order, each result
//! committed before the next call starts; a run of consecutive batched
//! calls records all its `tool/call`s first and its results once all ran.

use super::attempt::tool_calls;
use super::shared::Core;
use super::state::Delivery;
use super::state::interrupted;
use super::tools::{ToolCall, ToolOutcome};
use crate::{offload, prose};
use dsh_protocol::catalog::{ToolCall as ToolCallEvent, ToolErrorCode, TurnEndReason};
use dsh_session::Message;
use dsh_tools::{CancellationToken, ToolOutput};

/// What a step's calls came to.
pub(super) struct Ran {
    /// Whether the reply made any call.
    pub any: bool,
    /// Whether a call asked for the turn to end after this step.
    pub end_turn: bool,
}

/// Runs the calls of `reply` (step `step` of `turn`). `Err` carries how
/// the turn ends (the step is closed already).
pub(super) async fn run(
    core: &Core,
    turn: u32,
    step: u32,
    reply: &Message,
    cancel: &CancellationToken,
) -> Result<Ran, TurnEndReason> {
    // The calls are read from the message in the history: a large
    // argument text is not copied to run its call.
    let calls: Vec<(&str, &str, &str)> = tool_calls(reply).collect();
    let mut end_turn = false;
    let mut n = 0;
    while n < calls.len() {
        let end = batch_end(core, &calls, n);
        if cancel.is_cancelled() {
            let mut state = core.state();
            for (id, _, _) in calls.iter().skip(n) {
                state.tool_result(turn, step, id, None, prose::interrupted_tool_result());
            }
            state.end_step(turn, step);
            return Err(interrupted());
        }
        let (seqs, cwd) = {
            let mut state = core.state();
            let mut seqs = Vec::with_capacity(end - n);
            for (call_id, name, arguments) in &calls[n..end] {
                let seq = offload::emit_sized(arguments.len(), || {
                    state.event(ToolCallEvent {
                        turn,
                        step,
                        call_id,
                        name,
                        arguments,
                    })
                });
                if let Some(pending) = state.pending_calls.iter_mut().find(|(id, _)| id == call_id)
                {
                    pending.1 = Some(seq);
                }
                seqs.push(seq);
            }
            // Barrier before a tool runs: its call is on disk first.
            state.log.flush();
            if let Some(reason) = state.log_failure() {
                // No tool runs whose call is not on disk: these calls and
                // the ones after them get a failed result.
                for (i, (id, _, _)) in calls.iter().enumerate().skip(n) {
                    let seq = seqs.get(i - n).copied();
                    state.tool_result(turn, step, id, seq, not_run(&reason));
                }
                state.end_step(turn, step);
                return Err(reason);
            }
            (seqs, state.cwd.clone())
        };
        let mut outcomes: Vec<ToolOutcome> = Vec::with_capacity(end - n);
        for (call_id, name, arguments) in &calls[n..end] {
            let call = ToolCall {
                core,
                call_id,
                name,
                arguments,
                cwd: cwd.clone(),
                cancel,
                turn,
                step,
            };
            outcomes.push(core.roster.run(call).await);
        }
        let mut state = core.state();
        for (((call_id, name, arguments), call_seq), outcome) in
            calls[n..end].iter().zip(seqs).zip(outcomes)
        {
            state.tool_result(turn, step, call_id, Some(call_seq), outcome.output);
            // A follow-up joins right after its call's result.
            if let Some(notice) = outcome.follow_up {
                state.deliver(notice, Delivery::Notice, None);
            }
            for feature in core.hooks.iter() {
                feature.tool_finished(&mut state, name, arguments);
            }
            end_turn |= outcome.end_turn;
        }
        drop(state);
        n = end;
    }
    Ok(Ran {
        any: !calls.is_empty(),
        end_turn,
    })
}

/// The end of the batch of calls starting at `start`: the consecutive
/// calls the roster batches, or the one call at `start`.
fn batch_end(core: &Core, calls: &[(&str, &str, &str)], start: usize) -> usize {
    let batched = |(_, name, arguments): &(&str, &str, &str)| core.roster.batched(name, arguments);
    if !batched(&calls[start]) {
        return start + 1;
    }
    calls[start..]
        .iter()
        .position(|call| !batched(call))
        .map_or(calls.len(), |len| start + len)
}

/// The result of a tool call that was not run because of `reason` (see
/// [`AgentState::log_failure`](super::state::AgentState::log_failure)).
fn not_run(reason: &TurnEndReason) -> ToolOutput {
    let message = match reason {
        TurnEndReason::Error { error } => error.message.as_str(),
        _ => "",
    };
    ToolOutput::failure(format!("Error: the tool was not run: {message}"))
        .with_error(ToolErrorCode::SessionLogUnwritable)
}
