//! A step's context: the events that surface what the model will see
//! (system prompt, claimed messages, the features' context, the runtime
//! context snapshot, header, model context, title) in the official order,
//! and the request built from them.

use super::hooks::ContextSlot;
use super::shared::Core;
use super::state::AgentState;
use crate::profile::ProfileKind;
use crate::{offload, prose};
use dsh_llm::ModelRequest;
use dsh_protocol::catalog::{
    EventDraft, RequestContext, RequestHeader, RequestHeaderBody, SessionTitle, SystemMessageEvent,
    TitleSource,
};
use dsh_session::{Message, SystemMessage, UserMessage, text_block, text_of};
use serde_json::Value;

/// Appends the step's context events (system prompt, claimed messages,
/// runtime context, header, model context, title) and builds the request.
pub(super) fn prepare_request(
    core: &Core,
    state: &mut AgentState,
    turn: u32,
    step: u32,
    claimed: Vec<UserMessage>,
) -> ModelRequest {
    let system = core.system_prompt.clone();
    if state.system_prompt.as_deref() != Some(system.as_str()) {
        let message = SystemMessage::prompt(&system);
        state.emit(EventDraft::surfaced(SystemMessageEvent {
            turn,
            step,
            message: &message,
        }));
        state.system_prompt = Some(system.clone());
    }
    let mut prompt: Option<(u64, String)> = None;
    for message in claimed {
        let bytes = offload::content_bytes(&message.content);
        let seq = offload::emit_sized(bytes, || state.emit(EventDraft::surfaced(&message)));
        if message.source_kind() == Some("user") {
            prompt = Some((seq, title_source(&message.content)));
        }
        state.history.push(seq, turn, Message::User(message));
    }
    compose(core, state, turn, ContextSlot::AfterClaimed);
    let context = runtime_context(core, state);
    if state.runtime_context.as_deref() != Some(context.content_text()) {
        state.runtime_context = Some(context.content_text().to_owned());
        let seq = state.emit(EventDraft::surfaced(&context.message));
        state
            .history
            .push(seq, turn, Message::User(context.message));
    }
    compose(core, state, turn, ContextSlot::AfterRuntimeContext);
    if let Some(reason) = state.header_reason.take() {
        let (config, adapter_defaults) = core.route.header_config();
        let tools = state.tool_specs(&core.roster);
        let header = RequestHeaderBody {
            config,
            adapter_defaults,
            // The official reader refuses an empty `tools` list: omit it.
            tools: (!tools.is_empty()).then_some(&tools[..]),
        };
        state.event(RequestHeader { header, reason });
    }
    if !state.context_announced {
        let info = core.route.model_info();
        state.event(RequestContext {
            provider: core.route.provider.as_str(),
            model: core.route.model.as_str(),
            context_window: core.context_window,
            system_prompt_update: info.system_prompt_update,
        });
        state.context_announced = true;
    }
    if let Some((seq, text)) = prompt
        && !state.titled
        && let title = prose::fallback_title(&text)
        && !title.is_empty()
    {
        state.event(SessionTitle {
            title,
            message_seqs: vec![seq],
            source: TitleSource::Fallback,
        });
        state.titled = true;
    }
    // Barrier before the model request.
    state.log.flush();
    ModelRequest {
        session_id: core.id.clone(),
        route: core.route.clone(),
        system,
        messages: state.history.messages(),
        compact: false,
        tools: state.tool_specs(&core.roster),
    }
}

/// Appends the features' user messages for `slot` of a step of `turn` and
/// adds them to the history.
fn compose(core: &Core, state: &mut AgentState, turn: u32, slot: ContextSlot) {
    for feature in core.hooks.iter() {
        if let Some(message) = feature.compose(core, state, slot) {
            let seq = state.emit(EventDraft::surfaced(&message));
            state.history.push(seq, turn, Message::User(message));
        }
    }
}

/// Bytes of prompt text, after its leading whitespace, that the fallback
/// title is made from: far more than a title keeps, and a huge prompt is not
/// copied to make it.
const TITLE_SOURCE_BYTES: usize = 4096;

/// The prompt's text blocks joined by spaces, from the first non-whitespace
/// character, cut (at a character boundary) after [`TITLE_SOURCE_BYTES`].
fn title_source(content: &[Value]) -> String {
    let mut text = String::new();
    for block in text_of(content) {
        if !text.is_empty() {
            text.push(' ');
        }
        let block = if text.trim_start().is_empty() {
            text.clear();
            block.trim_start()
        } else {
            block
        };
        let room = TITLE_SOURCE_BYTES.saturating_sub(text.len());
        let mut cut = room.min(block.len());
        while !block.is_char_boundary(cut) {
            cut -= 1;
        }
        text.push_str(&block[..cut]);
        if text.len() >= TITLE_SOURCE_BYTES {
            break;
        }
    }
    text
}

struct RuntimeContext {
    message: UserMessage,
}

impl RuntimeContext {
    fn content_text(&self) -> &str {
        text_of(&self.message.content).next().unwrap_or_default()
    }
}

fn runtime_context(core: &Core, state: &AgentState) -> RuntimeContext {
    let mut sections = vec![prose::working_directory_section(&state.cwd)];
    if core.profile.kind == ProfileKind::Sdk {
        sections.push(prose::sandbox_section(
            core.profile.permission_mode.as_str(),
            &core.workspace,
        ));
        sections.push(prose::approval_section(core.profile.approval.as_str()));
        for feature in core.hooks.iter() {
            feature.runtime_sections(core, &mut sections);
        }
    }
    let text = prose::context_text(&sections);
    let sections = sections.iter().map(|s| (s.name, s.text.as_str()));
    RuntimeContext {
        message: UserMessage::runtime_context(vec![text_block(text)], sections),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dsh_session::text_block;

    #[test]
    fn title_source_joins_blocks_and_skips_leading_whitespace() {
        let content = vec![
            text_block("  \n"),
            serde_json::json!({"type": "image"}),
            text_block("  hello"),
            text_block("world "),
        ];
        assert_eq!(title_source(&content), "hello world ");
    }

    #[test]
    fn title_source_is_bounded_and_cut_at_a_character() {
        let huge = "é".repeat(TITLE_SOURCE_BYTES);
        let text = title_source(&[text_block(huge)]);
        assert!(text.len() <= TITLE_SOURCE_BYTES && text.len() > TITLE_SOURCE_BYTES - 2);
        assert!(text.chars().all(|c| c == 'é'));
    }
}
