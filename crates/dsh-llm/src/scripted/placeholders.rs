//! The ids a scripted tool call's arguments name before they exist:
//! `{{agent:N}}`, `{{goal}}` and `{{job}}`, replaced from the request's
//! history.

use super::scenario::Reply;
use dsh_session::{Message, text_of};
use serde_json::Value;
use std::sync::Arc;

/// What a scripted tool call writes for "the id of the N-th subagent this
/// session started" (from 0): `{{agent:N}}`, replaced by the id its history
/// shows in the N-th `started subagent <id>` tool result.
const AGENT_PLACEHOLDER: &str = "{{agent:";

/// Replaces every `{{agent:N}}` in the reply's tool-call arguments.
pub(super) fn substitute_agent_ids(reply: &mut Reply, messages: &[Arc<Message>]) {
    let ids: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m.as_ref() {
            Message::Tool(t) => text_of(&t.content)
                .find_map(|text| text.strip_prefix(STARTED))
                .map(str::trim),
            _ => None,
        })
        .collect();
    reply.substitute_agent_ids(&ids);
}

/// How a `subagent` tool result names the child it started.
const STARTED: &str = "started subagent ";

/// The ids of the subagents `text` (a request body) shows started, in
/// order, each once: what follows every `started subagent ` up to the
/// first character that cannot be part of an id.
pub fn started_agent_ids(text: &str) -> Vec<&str> {
    let mut ids: Vec<&str> = Vec::new();
    for (at, _) in text.match_indices(STARTED) {
        let rest = &text[at + STARTED.len()..];
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
            .unwrap_or(rest.len());
        let id = &rest[..end];
        if !id.is_empty() && !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// What a scripted tool call writes for "the id of the session's latest
/// goal": `{{goal}}`, replaced by the last `goal-<uuid>` its request shows
/// (see [`last_goal_id`]).
const GOAL_PLACEHOLDER: &str = "{{goal}}";

/// Length of a goal id: `goal-` and a hyphenated UUID.
const GOAL_ID_LEN: usize = 5 + 36;

/// The last goal id (`goal-` followed by a hyphenated UUID) in `text`.
pub fn last_goal_id(text: &str) -> Option<&str> {
    text.rmatch_indices("goal-").find_map(|(at, _)| {
        let id = text.get(at..at + GOAL_ID_LEN)?;
        let uuid = &id[5..];
        let shaped = uuid.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        });
        shaped.then_some(id)
    })
}

impl Reply {
    /// Replaces every `{{agent:N}}` in the reply's tool-call arguments with
    /// `ids[N]` (a placeholder past the list is left as written).
    pub fn substitute_agent_ids(&mut self, ids: &[&str]) {
        self.edit_arguments(&mut |text| {
            if text.contains(AGENT_PLACEHOLDER) {
                for (n, id) in ids.iter().enumerate() {
                    *text = text.replace(&format!("{AGENT_PLACEHOLDER}{n}}}}}"), id);
                }
            }
        });
    }

    /// Replaces every `{{goal}}` in the reply's tool-call arguments with
    /// `goal_id`.
    pub fn substitute_goal_id(&mut self, goal_id: &str) {
        self.substitute(GOAL_PLACEHOLDER, goal_id);
    }

    /// Replaces every `{{job}}` in the reply's tool-call arguments with
    /// `job_id`.
    pub fn substitute_job_id(&mut self, job_id: &str) {
        self.substitute(JOB_PLACEHOLDER, job_id);
    }

    fn substitute(&mut self, placeholder: &str, with: &str) {
        self.edit_arguments(&mut |text| {
            if text.contains(placeholder) {
                *text = text.replace(placeholder, with);
            }
        });
    }

    /// Applies `edit` to every string in the reply's tool-call arguments.
    fn edit_arguments(&mut self, edit: &mut impl FnMut(&mut String)) {
        for block in &mut self.blocks {
            if let Some(call) = &mut block.tool_call
                && let Some(arguments) = &mut call.arguments
            {
                edit_strings(arguments, edit);
            }
        }
    }
}

/// Applies `edit` to every string in `value`, however deep.
fn edit_strings(value: &mut Value, edit: &mut impl FnMut(&mut String)) {
    match value {
        Value::String(text) => edit(text),
        Value::Array(items) => items.iter_mut().for_each(|v| edit_strings(v, edit)),
        Value::Object(map) => map.values_mut().for_each(|v| edit_strings(v, edit)),
        _ => {}
    }
}

/// What a scripted tool call writes for "the id of the last background job
/// the session was told of": `{{job}}`, replaced by the last
/// `bash-<16 hex>` or `workflow-<16 hex>` its request shows (see
/// [`last_job_id`]).
const JOB_PLACEHOLDER: &str = "{{job}}";

/// The last job id (`bash-` or `workflow-` followed by 16 hex digits) in
/// `text`.
pub fn last_job_id(text: &str) -> Option<&str> {
    const HEX: usize = 16;
    let shaped = |at: usize, prefix: &str| {
        let id = text.get(at..at + prefix.len() + HEX)?;
        id[prefix.len()..]
            .bytes()
            .all(|b| b.is_ascii_hexdigit())
            .then_some((at, id))
    };
    let last = |prefix: &'static str| {
        text.rmatch_indices(prefix)
            .find_map(|(at, _)| shaped(at, prefix))
    };
    match (last("bash-"), last("workflow-")) {
        (Some(a), Some(b)) => Some(if a.0 > b.0 { a.1 } else { b.1 }),
        (a, b) => a.or(b).map(|(_, id)| id),
    }
}

/// The last job id the user and tool messages of `messages` show (a job
/// is named in its call's result and in its completion notice).
pub(super) fn history_job_id(messages: &[Arc<Message>]) -> Option<&str> {
    messages.iter().rev().find_map(|m| match m.as_ref() {
        Message::Tool(t) => text_of(&t.content).filter_map(last_job_id).last(),
        Message::User(u) => text_of(&u.content).filter_map(last_job_id).last(),
        _ => None,
    })
}

/// The last goal id the tool results of `messages` show.
pub(super) fn history_goal_id(messages: &[Arc<Message>]) -> Option<&str> {
    messages.iter().rev().find_map(|m| match m.as_ref() {
        Message::Tool(t) => text_of(&t.content).filter_map(last_goal_id).last(),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_job_placeholder_takes_the_last_job_id_shown() {
        let text = "bash-0123456789abcdef then workflow-fedcba9876543210 bash-short workflow-";
        assert_eq!(last_job_id(text), Some("workflow-fedcba9876543210"));
        assert_eq!(
            last_job_id("workflow-fedcba9876543210 bash-0123456789abcdef"),
            Some("bash-0123456789abcdef")
        );
        assert_eq!(last_job_id("bash-0123456789abcdeZ"), None);
        let mut reply: Reply = serde_json::from_value(json!({"blocks": [{"tool_call": {
            "name": "job_output",
            "arguments": {"job_id": "{{job}}", "wait": true},
        }}]}))
        .unwrap();
        reply.substitute_job_id("bash-0123456789abcdef");
        let arguments = reply.blocks[0]
            .tool_call
            .as_ref()
            .unwrap()
            .arguments
            .clone();
        assert_eq!(
            arguments,
            Some(json!({"job_id": "bash-0123456789abcdef", "wait": true}))
        );
    }

    #[test]
    fn the_agent_placeholder_takes_the_nth_started_subagent() {
        let started = |id: &str| {
            Arc::new(Message::Tool(dsh_session::ToolMessage::new(
                "call",
                vec![dsh_session::text_block(format!("started subagent {id}"))],
                false,
            )))
        };
        let mut reply: Reply = serde_json::from_value(json!({"blocks": [{"tool_call": {
            "name": "send_message",
            "arguments": {"to": "{{agent:1}}", "all": ["{{agent:0}} and {{agent:1}}", 2]},
        }}]}))
        .unwrap();
        substitute_agent_ids(&mut reply, &[started("child-a"), started("child-b")]);
        let arguments = first_call_arguments(&reply);
        assert_eq!(
            arguments,
            Some(json!({"to": "child-b", "all": ["child-a and child-b", 2]}))
        );
    }

    #[test]
    fn started_agent_ids_are_read_from_a_request_body_in_order_once() {
        let body = r#"{"messages":[{"content":"started subagent 1f0c-aa_9"},{"content":"started subagent b2\n"},{"content":"started subagent 1f0c-aa_9"},{"content":"started subagent "}]}"#;
        assert_eq!(started_agent_ids(body), ["1f0c-aa_9", "b2"]);
    }

    /// The arguments of a reply's first tool call.
    fn first_call_arguments(reply: &Reply) -> Option<serde_json::Value> {
        reply.blocks[0]
            .tool_call
            .as_ref()
            .and_then(|c| c.arguments.clone())
    }

    #[test]
    fn the_goal_placeholder_takes_the_last_goal_id_shown() {
        let a = "goal-186ba0b3-2046-457e-b027-e870c5d94b9d";
        let b = "goal-b0539ea3-0cfc-46be-9bbc-fc88cc236452";
        let text = format!(r#"{{"id":"{a}"}} then {{\"id\":\"{b}\"}} goal-nothex goal-"#);
        assert_eq!(last_goal_id(&text), Some(b));
        assert_eq!(last_goal_id("goal-zz"), None);
        let mut reply: Reply = serde_json::from_value(json!({"blocks": [{"tool_call": {
            "name": "update_goal",
            "arguments": {"goal_id": "{{goal}}", "nested": ["x {{goal}}"]},
        }}]}))
        .unwrap();
        reply.substitute_goal_id(a);
        let arguments = first_call_arguments(&reply);
        assert_eq!(
            arguments,
            Some(json!({"goal_id": a, "nested": [format!("x {a}")]}))
        );
    }
}
