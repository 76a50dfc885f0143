//! Command hooks (Claude Code's and Codex's format, run by `dsh-hooks`) at
//! the matching points of the loop:
//!
//! * `SessionStart` and `UserPromptSubmit` before a turn's first step (a
//!   root session's; their context joins that step, a refused prompt ends
//!   the turn `blocked`);
//! * `PreToolUse` before each call (refuse, rewrite, ask the client through
//!   the approval path, stop) and `PostToolUse` after it (a notice for the
//!   model);
//! * `Stop` / `SubagentStop` when the model ends its turn (a block keeps it
//!   working, at most [`MAX_STOP_BLOCKS`] times in a row);
//! * `PreCompact` before a compaction, `Notification` when a tool asks for
//!   approval, `SessionEnd` when the session closes.
//!
//! Every run is recorded (`dsh/hook-run`), and the sources when the
//! session's first turn in this process begins (`dsh/hooks-loaded`). A
//! `continue: false` ends the turn `aborted` (kind `hook`).

mod input;
mod record;

use crate::core::{
    AfterTool, AgentState, CallView, ContextSlot, Core, Feature, Gate, HookFuture, Stopping,
};
use dsh_hooks::{HookEvent, Outcome, decision, runner, tools};
use dsh_protocol::catalog::{AbortReason, TurnEndReason};
use dsh_session::{UserMessage, text_block};
use dsh_tools::{CancellationToken, ToolOutput};
use input::{hooks_of, input};
use record::ForCall;
use serde_json::{Value, json};

/// Most times in a row `Stop` hooks may keep a turn going.
pub(crate) const MAX_STOP_BLOCKS: u32 = 8;

/// `source.kind` of the messages hooks add for the model.
const HOOK_CONTEXT: &str = "hook-context";

/// The feature.
pub(crate) struct CommandHooks;

/// Per-agent hook state.
#[derive(Default)]
struct HookState {
    /// `dsh/hooks-loaded` and `SessionStart` ran in this process.
    started: bool,
    /// The session was resumed (`SessionStart` source `resume`).
    resumed: bool,
    /// The running turn's prompt, until `UserPromptSubmit` ran.
    prompt: Option<String>,
    /// Context for the next step.
    context: Vec<String>,
    /// `Stop` blocks in a row in the running turn.
    stop_blocks: u32,
}

/// Runs `event`'s hooks matching `values` with `fields`; records them.
async fn run(
    core: &Core,
    event: HookEvent,
    turn: Option<u32>,
    values: &[&str],
    fields: Value,
    call: Option<&ForCall<'_>>,
    cancel: &CancellationToken,
) -> Outcome {
    let Some(hooks) = hooks_of(core) else {
        return Outcome::default();
    };
    let handlers = runner::matching(&hooks.set, event, values);
    if handlers.is_empty() {
        return Outcome::default();
    }
    let (input, env) = input(core, event, turn, fields);
    let runs = runner::run_all(&handlers, event, &input, &env, cancel).await;
    let outcome = decision::judge(event, runs);
    record::runs(core, event, turn, call, &outcome);
    outcome
}

/// A notice for the model from `event`'s hooks.
fn notice(event: HookEvent, text: String) -> UserMessage {
    UserMessage::inbox_notice(
        HOOK_CONTEXT,
        vec![text_block(text)],
        &format!("{} hook", event.name()),
        None,
    )
}

fn is_root(core: &Core) -> bool {
    core.lineage.parent.is_none()
}

/// The text of a client's prompt (`source.kind` `user`), if `message` is one.
fn prompt_text(message: &UserMessage) -> Option<String> {
    if message.source.get("kind").and_then(Value::as_str) != Some("user") {
        return None;
    }
    let mut text = String::new();
    for block in &message.content {
        if let Some(part) = block.get("text").and_then(Value::as_str) {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(part);
        }
    }
    Some(text)
}

impl Feature for CommandHooks {
    fn restored(&self, state: &mut AgentState) {
        state.extension::<HookState>().resumed = true;
    }

    fn turn_started(&self, state: &mut AgentState, prompt: Option<&UserMessage>) {
        let hooks = state.extension::<HookState>();
        hooks.stop_blocks = 0;
        hooks.prompt = prompt.and_then(prompt_text);
    }

    fn before_step<'a>(
        &'a self,
        core: &'a Core,
        turn: u32,
        _pending: &'a [UserMessage],
        cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Option<TurnEndReason>> {
        Box::pin(before_step(core, turn, cancel))
    }

    fn compose(
        &self,
        _core: &Core,
        state: &mut AgentState,
        slot: ContextSlot,
    ) -> Option<UserMessage> {
        if slot != ContextSlot::AfterClaimed {
            return None;
        }
        let context = std::mem::take(&mut state.extension::<HookState>().context);
        (!context.is_empty())
            .then(|| UserMessage::notice(HOOK_CONTEXT, vec![text_block(context.join("\n\n"))]))
    }

    fn before_tool<'a>(
        &'a self,
        core: &'a Core,
        call: &'a CallView<'a>,
        cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Gate> {
        Box::pin(before_tool(core, call, cancel))
    }

    fn after_tool<'a>(
        &'a self,
        core: &'a Core,
        call: &'a CallView<'a>,
        output: &'a ToolOutput,
        cancel: &'a CancellationToken,
    ) -> HookFuture<'a, AfterTool> {
        Box::pin(after_tool(core, call, output, cancel))
    }

    fn stopping<'a>(
        &'a self,
        core: &'a Core,
        turn: u32,
        cancel: &'a CancellationToken,
    ) -> HookFuture<'a, Stopping> {
        Box::pin(stopping(core, turn, cancel))
    }

    fn compacting<'a>(
        &'a self,
        core: &'a Core,
        turn: u32,
        trigger: &'static str,
        cancel: &'a CancellationToken,
    ) -> HookFuture<'a, ()> {
        Box::pin(async move {
            let fields = json!({"trigger": trigger, "custom_instructions": ""});
            run(
                core,
                HookEvent::PreCompact,
                Some(turn),
                &[trigger],
                fields,
                None,
                cancel,
            )
            .await;
        })
    }

    fn approval_asked(&self, core: &Core, tool: &str, reason: &str) {
        let has = hooks_of(core).is_some_and(|h| h.set.has(HookEvent::Notification));
        let Some(core) = core.this.upgrade().filter(|_| has) else {
            return;
        };
        let message = format!(
            "DeepSeek Harness needs your permission to use {}: {reason}",
            tools::claude_name(tool)
        );
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        // Notification hooks decide nothing: the approval does not wait.
        runtime.spawn(async move {
            let fields = json!({
                "message": message,
                "title": "Permission needed",
                "notification_type": "permission_prompt",
            });
            let turn = core.state().open_turn();
            let cancel = core.cancel.clone();
            run(
                &core,
                HookEvent::Notification,
                turn,
                &["permission_prompt"],
                fields,
                None,
                &cancel,
            )
            .await;
        });
    }

    fn closing<'a>(&'a self, core: &'a Core, reason: &'a str) -> HookFuture<'a, ()> {
        Box::pin(async move {
            if is_root(core) {
                let fields = json!({"reason": reason});
                let cancel = CancellationToken::new();
                run(
                    core,
                    HookEvent::SessionEnd,
                    None,
                    &[reason],
                    fields,
                    None,
                    &cancel,
                )
                .await;
            }
        })
    }
}

/// `dsh/hooks-loaded` and `SessionStart` once, then `UserPromptSubmit` for
/// a turn begun by a prompt (a root session's).
async fn before_step(core: &Core, turn: u32, cancel: &CancellationToken) -> Option<TurnEndReason> {
    let hooks = hooks_of(core)?;
    let (first, resumed, prompt) = {
        let mut state = core.state();
        let ours = state.extension::<HookState>();
        let first = !std::mem::replace(&mut ours.started, true);
        (first, ours.resumed, ours.prompt.take())
    };
    if first {
        record::loaded(core, &hooks.set);
    }
    if !is_root(core) {
        return None;
    }
    if first {
        let source = if resumed { "resume" } else { "startup" };
        let fields = json!({"source": source});
        let outcome = run(
            core,
            HookEvent::SessionStart,
            Some(turn),
            &[source],
            fields,
            None,
            cancel,
        )
        .await;
        add_context(core, outcome.context);
    }
    let prompt = prompt?;
    let fields = json!({"prompt": prompt});
    let outcome = run(
        core,
        HookEvent::UserPromptSubmit,
        Some(turn),
        &[],
        fields,
        None,
        cancel,
    )
    .await;
    if let Some(reason) = outcome.stop {
        return Some(TurnEndReason::Aborted {
            reason: AbortReason::Hook { reason },
        });
    }
    if outcome.block.is_some() {
        // The prompt never reaches the model; the reason is in the record.
        return Some(TurnEndReason::Blocked);
    }
    add_context(core, outcome.context);
    None
}

fn add_context(core: &Core, context: Vec<String>) {
    if !context.is_empty() {
        core.state()
            .extension::<HookState>()
            .context
            .extend(context);
    }
}

/// The arguments of `call` as an object for `tool_input`.
fn arguments(call: &CallView<'_>) -> Value {
    if call.arguments.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(call.arguments).unwrap_or_else(|_| Value::from(call.arguments))
}

/// Runs `event`'s hooks for `call`, with its `tool_input` and (after the
/// call) its `tool_response`.
async fn run_for_call(
    core: &Core,
    event: HookEvent,
    call: &CallView<'_>,
    input: Value,
    response: Option<Value>,
    cancel: &CancellationToken,
) -> Outcome {
    let mut fields = json!({
        "tool_name": tools::claude_name(call.name),
        "tool_input": input,
    });
    if let Some(response) = response {
        fields["tool_response"] = response;
    }
    fields["tool_use_id"] = json!(call.call_id);
    let for_call = ForCall {
        call_id: call.call_id,
        tool: call.name,
    };
    let values = tools::match_names(call.name);
    run(
        core,
        event,
        Some(call.turn),
        &values,
        fields,
        Some(&for_call),
        cancel,
    )
    .await
}

async fn before_tool(core: &Core, call: &CallView<'_>, cancel: &CancellationToken) -> Gate {
    let input = tools::tool_input(call.name, &arguments(call), call.cwd);
    let outcome = run_for_call(core, HookEvent::PreToolUse, call, input, None, cancel).await;
    if let Some(reason) = outcome.stop {
        return Gate::Stop(reason);
    }
    if let Some(reason) = outcome.block {
        return Gate::Refuse(ToolOutput::failure(format!(
            "Error: the call was blocked by a PreToolUse hook: {reason}"
        )));
    }
    if !outcome.context.is_empty() {
        let text = outcome.context.join("\n\n");
        core.deliver(
            notice(HookEvent::PreToolUse, text),
            crate::core::Delivery::Notice,
            None,
        );
    }
    let rewritten = outcome
        .updated_input
        .map(|updated| tools::arguments_from(call.name, &updated).to_string());
    match outcome.ask {
        Some(reason) => Gate::Ask(format!("PreToolUse hook: {reason}"), rewritten),
        None => Gate::Run(rewritten),
    }
}

async fn after_tool(
    core: &Core,
    call: &CallView<'_>,
    output: &ToolOutput,
    cancel: &CancellationToken,
) -> AfterTool {
    // As in Claude Code, only a call that succeeded (a failed one is
    // Claude Code's `PostToolUseFailure`, which dsh does not run).
    if output.is_error || !hooks_of(core).is_some_and(|h| h.set.has(HookEvent::PostToolUse)) {
        return AfterTool::default();
    }
    let input = tools::tool_input(call.name, &arguments(call), call.cwd);
    let aborted = output
        .error
        .as_ref()
        .is_some_and(|e| e.code == dsh_tools::ToolErrorCode::Aborted);
    let response = tools::tool_response(
        call.name,
        &input,
        &output.text_content(),
        output.is_error,
        aborted,
    );
    let outcome = run_for_call(
        core,
        HookEvent::PostToolUse,
        call,
        input,
        Some(response),
        cancel,
    )
    .await;
    let mut said: Vec<String> = Vec::new();
    if let Some(reason) = outcome.block {
        said.push(reason);
    }
    said.extend(outcome.context);
    AfterTool {
        notice: (!said.is_empty()).then(|| notice(HookEvent::PostToolUse, said.join("\n\n"))),
        stop: outcome.stop,
    }
}

async fn stopping(core: &Core, turn: u32, cancel: &CancellationToken) -> Stopping {
    let event = if is_root(core) {
        HookEvent::Stop
    } else {
        HookEvent::SubagentStop
    };
    if !hooks_of(core).is_some_and(|h| h.set.has(event)) {
        return Stopping::End;
    }
    let blocks = core.state().extension::<HookState>().stop_blocks;
    let fields = json!({"stop_hook_active": blocks > 0});
    let outcome = run(core, event, Some(turn), &[], fields, None, cancel).await;
    if let Some(reason) = outcome.stop {
        return Stopping::Abort(reason);
    }
    let Some(reason) = outcome.block else {
        return Stopping::End;
    };
    if blocks >= MAX_STOP_BLOCKS {
        tracing::warn!(
            session = core.id,
            "{event} hooks blocked {MAX_STOP_BLOCKS} times in a row; the turn ends"
        );
        return Stopping::End;
    }
    core.state().extension::<HookState>().stop_blocks = blocks + 1;
    Stopping::Continue(notice(event, reason))
}
