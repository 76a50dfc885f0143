//! A reply's tool calls: run one after another in model order, each result
//! committed before the next call starts; a run of consecutive batched
//! calls records all its `tool/call`s first and its results once all ran.

use super::attempt::tool_calls;
use super::hooks::{CallView, Gate};
use super::shared::Core;
use super::state::Delivery;
use super::state::interrupted;
use super::tools::{ToolCall, ToolOutcome};
use crate::{offload, prose};
use dsh_protocol::catalog::{AbortReason, ToolCall as ToolCallEvent, ToolErrorCode, TurnEndReason};
use dsh_session::{Message, UserMessage};
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
        let mut ran: Vec<OneCall> = Vec::with_capacity(end - n);
        let mut stop: Option<String> = None;
        for (call_id, name, arguments) in &calls[n..end] {
            // A hook stopped the agent: the batch's later calls do not run.
            if let Some(reason) = &stop {
                ran.push(prose::stopped_by_hook_result(reason).into());
                continue;
            }
            let view = CallView {
                turn,
                call_id,
                name,
                arguments,
                cwd: &cwd,
            };
            let one = run_one(core, step, view, cancel).await;
            if stop.is_none() {
                stop.clone_from(&one.stop);
            }
            ran.push(one);
        }
        let mut state = core.state();
        for (((call_id, name, arguments), call_seq), one) in calls[n..end].iter().zip(seqs).zip(ran)
        {
            state.tool_result(turn, step, call_id, Some(call_seq), one.outcome.output);
            // A follow-up joins right after its call's result.
            for notice in [one.outcome.follow_up, one.notice].into_iter().flatten() {
                state.deliver(notice, Delivery::Notice, None);
            }
            for feature in core.hooks.iter() {
                feature.tool_finished(&mut state, name, arguments);
            }
            end_turn |= one.outcome.end_turn;
        }
        if let Some(reason) = stop {
            // A hook stopped the agent: the calls after this batch do not run.
            for (id, _, _) in calls.iter().skip(end) {
                state.tool_result(turn, step, id, None, prose::stopped_by_hook_result(&reason));
            }
            state.end_step(turn, step);
            return Err(TurnEndReason::Aborted {
                reason: AbortReason::Hook { reason },
            });
        }
        drop(state);
        n = end;
    }
    Ok(Ran {
        any: !calls.is_empty(),
        end_turn,
    })
}

/// One call's outcome and what the features said after it.
struct OneCall {
    outcome: ToolOutcome,
    /// A notice for the model after the result.
    notice: Option<UserMessage>,
    /// End the turn with this reason.
    stop: Option<String>,
}

impl From<ToolOutput> for OneCall {
    fn from(output: ToolOutput) -> Self {
        Self {
            outcome: output.into(),
            notice: None,
            stop: None,
        }
    }
}

/// Runs one call of step `step` through the features' gate (which may
/// rewrite its arguments, ask the client, refuse it or stop the turn),
/// then tells the features how it ended.
async fn run_one(
    core: &Core,
    step: u32,
    view: CallView<'_>,
    cancel: &CancellationToken,
) -> OneCall {
    let mut gate = Gate::Run(None);
    for feature in core.hooks.iter() {
        gate = feature.before_tool(core, &view, cancel).await;
        if !matches!(gate, Gate::Run(None)) {
            break;
        }
    }
    let (rewritten, ask) = match gate {
        Gate::Run(rewritten) => (rewritten, None),
        Gate::Ask(reason, rewritten) => (rewritten, Some(reason)),
        Gate::Refuse(output) => return output.into(),
        Gate::Stop(reason) => {
            return OneCall {
                stop: Some(reason.clone()),
                ..prose::stopped_by_hook_result(&reason).into()
            };
        }
    };
    // The turn was cancelled while the features decided: the call does
    // not start.
    if cancel.is_cancelled() {
        return prose::interrupted_tool_result().into();
    }
    let view = CallView {
        arguments: rewritten.as_deref().unwrap_or(view.arguments),
        ..view
    };
    let call = || ToolCall {
        core,
        call_id: view.call_id,
        name: view.name,
        arguments: view.arguments,
        cwd: view.cwd.to_path_buf(),
        cancel,
        turn: view.turn,
        step,
    };
    if let Some(reason) = ask {
        let shown = serde_json::from_str(view.arguments)
            .unwrap_or_else(|_| serde_json::Value::from(view.arguments));
        let ctx = super::tools::context(call());
        if let Some(refused) = dsh_tools::ask_for_call(&ctx, view.name, &shown, reason).await {
            return refused.into();
        }
    }
    let outcome = core.roster.run(call()).await;
    let mut one = OneCall {
        outcome,
        notice: None,
        stop: None,
    };
    for feature in core.hooks.iter() {
        let after = feature
            .after_tool(core, &view, &one.outcome.output, cancel)
            .await;
        one.notice = one.notice.or(after.notice);
        one.stop = one.stop.or(after.stop);
    }
    one
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
