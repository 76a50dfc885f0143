//! The scripted provider: mounts a model (`echo` or a scenario), picks
//! each request's reply and plays it (delays, stalls, cut and reset
//! streams).

use super::placeholders::{history_goal_id, history_job_id, substitute_agent_ids};
use super::scenario::{Reply, Scenario, ScenarioError, Text};
use super::select::ScriptKey;
use super::stream::{chunks, estimate_input};
use super::{ECHO, NAME};
use crate::LlmFailureCode;
use crate::{ChunkSender, FinishReason, LlmFailure, ModelRequest, Provider, StreamChunk};
use dsh_protocol::message::KeptMessage;
use dsh_session::{Message, text_of};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

#[derive(Debug)]
enum Mode {
    Echo,
    Script(Scenario),
}

/// The scripted provider for one route.
#[derive(Debug)]
pub struct ScriptedProvider {
    model: String,
    mode: Mode,
    /// The next reply of each session in each script.
    next_reply: Mutex<HashMap<(String, ScriptKey), usize>>,
}

impl ScriptedProvider {
    /// Mounts `model`: `echo` or an absolute scenario path.
    pub fn for_model(model: &str) -> Result<Self, ScenarioError> {
        let mode = if model == ECHO {
            Mode::Echo
        } else if Path::new(model).is_absolute() {
            Mode::Script(Scenario::load(Path::new(model))?)
        } else {
            return Err(ScenarioError::NotAModel(model.to_owned()));
        };
        Ok(Self {
            model: model.to_owned(),
            mode,
            next_reply: Mutex::new(HashMap::new()),
        })
    }

    /// The next reply to `request`, whose history is `messages` (parsed).
    fn next_reply(
        &self,
        request: &ModelRequest,
        messages: &[Arc<Message>],
    ) -> Result<Reply, LlmFailure> {
        match &self.mode {
            Mode::Echo => Ok(Reply {
                text: Some(Text::Whole(latest_prompt_text(messages))),
                ..Reply::default()
            }),
            Mode::Script(scenario) => {
                let mut next = self.next_reply.lock().map_err(|_| {
                    LlmFailure::new(
                        LlmFailureCode::Unknown,
                        "scripted provider state is poisoned",
                    )
                })?;
                let prompts: Vec<(usize, String)> = messages
                    .iter()
                    .enumerate()
                    .filter_map(|(at, m)| match m.as_ref() {
                        Message::User(u) if u.source_kind() == Some("user") => {
                            Some((at, prompt_text(&u.content)))
                        }
                        _ => None,
                    })
                    .collect();
                let texts: Vec<&str> = prompts.iter().map(|(_, t)| t.as_str()).collect();
                let script = scenario.script_for(&texts);
                // A session this provider has not seen yet (a resumed one, a
                // forked child) continues after the replies its history
                // already holds: for an agent script, those after the first
                // prompt that chose it.
                let from = script
                    .first_match
                    .and_then(|p| prompts.get(p))
                    .map_or(0, |(at, _)| at + 1);
                let answered = messages
                    .iter()
                    .skip(from)
                    .filter(|m| matches!(m.as_ref(), Message::Assistant(_)))
                    .count();
                let index = next
                    .entry((request.session_id.clone(), script.key))
                    .or_insert(answered);
                let mut reply = script.replies.get(*index).cloned();
                *index += 1;
                if let Some(reply) = &mut reply {
                    substitute_agent_ids(reply, messages);
                    if let Some(goal) = history_goal_id(messages) {
                        reply.substitute_goal_id(goal);
                    }
                    if let Some(job) = history_job_id(messages) {
                        reply.substitute_job_id(job);
                    }
                }
                reply.ok_or_else(|| {
                    LlmFailure::new(
                        LlmFailureCode::ScriptExhausted,
                        format!(
                            "scripted scenario {} has no reply {} in its {script} for session {}",
                            self.model, *index, request.session_id
                        ),
                    )
                })
            }
        }
    }
}

/// Chunks a scripted reply sends between two yields to the runtime.
const YIELD_EVERY: usize = 256;

impl Provider for ScriptedProvider {
    fn name(&self) -> &str {
        NAME
    }

    fn replay_kind(&self) -> &str {
        NAME
    }

    fn start(&self, request: ModelRequest, out: ChunkSender) {
        let messages: Vec<Arc<Message>> = request.messages.iter().map(KeptMessage::get).collect();
        let prepared = check_content(&messages).and_then(|()| self.next_reply(&request, &messages));
        let model = self.model.clone();
        let input_estimate = estimate_input(&request, &messages);
        tokio::spawn(async move {
            let reply = match prepared {
                Ok(reply) => reply,
                Err(failure) => return finish_error(&out, failure),
            };
            if let Some(delay) = reply.delay_ms {
                tokio::time::sleep(Duration::from_millis(delay)).await;
            }
            if reply.hostile.is_some() {
                let message = format!("{NAME}: hostile replies are played only by dsh-fake-model");
                return finish_error(
                    &out,
                    LlmFailure::new(LlmFailureCode::ScriptUnsupported, message),
                );
            }
            let mut first_delta = true;
            for (n, chunk) in chunks(&reply, &model, input_estimate)
                .into_iter()
                .enumerate()
            {
                // A long reply streams as a network one would: the task
                // gives the workers back now and then instead of holding
                // one for the whole reply (other sessions keep being
                // served).
                if n % YIELD_EVERY == YIELD_EVERY - 1 {
                    tokio::task::yield_now().await;
                }
                let delta = matches!(
                    chunk,
                    StreamChunk::TextDelta { .. }
                        | StreamChunk::ReasoningDelta { .. }
                        | StreamChunk::ToolCallDelta { .. }
                );
                if out.send(chunk).is_err() {
                    return;
                }
                // A slowly streamed reply (a demo in `dsh web`, a test of
                // what a client shows mid-stream).
                if delta && let Some(gap) = reply.delta_gap_ms {
                    tokio::time::sleep(Duration::from_millis(gap)).await;
                }
                if delta && std::mem::take(&mut first_delta) {
                    if let Some(stall) = reply.stall_ms {
                        tokio::time::sleep(Duration::from_millis(stall)).await;
                    }
                    if reply.cut {
                        let message = format!("{NAME} stream ended before its finish");
                        return finish_error(
                            &out,
                            LlmFailure::new(LlmFailureCode::StreamClosed, message),
                        );
                    }
                    if reply.reset {
                        let message = format!("{NAME} transport failed: connection reset");
                        return finish_error(
                            &out,
                            LlmFailure::new(LlmFailureCode::Transport, message),
                        );
                    }
                }
            }
        });
    }
}

fn finish_error(out: &ChunkSender, failure: LlmFailure) {
    let _ = out.send(StreamChunk::Finish {
        reason: FinishReason::Error { failure },
        replay_state: None,
    });
}

/// The text of the latest user prompt (`source.kind == "user"`).
fn latest_prompt_text(messages: &[Arc<Message>]) -> String {
    messages
        .iter()
        .rev()
        .find_map(|m| match m.as_ref() {
            Message::User(u) if u.source_kind() == Some("user") => Some(prompt_text(&u.content)),
            _ => None,
        })
        .unwrap_or_default()
}

/// A prompt's text blocks, joined by newlines.
fn prompt_text(content: &[Value]) -> String {
    text_of(content).collect::<Vec<_>>().join("\n")
}

/// Like the official Messages serialiser: user content other than text and
/// images cannot be represented.
fn check_content(messages: &[Arc<Message>]) -> Result<(), LlmFailure> {
    for message in messages {
        let (role, content) = match message.as_ref() {
            Message::User(u) => ("user", &u.content),
            Message::Tool(t) => ("tool-result", &t.content),
            _ => continue,
        };
        for block in content {
            let kind = block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("<none>");
            if kind != "text" && kind != "image" {
                return Err(LlmFailure::new(
                    LlmFailureCode::UnsupportedContent,
                    format!("{NAME} provider cannot represent {role} content {kind}"),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted::uuid_like;
    use crate::{Accumulator, Route, Settled};
    use dsh_session::{AssistantMessage, UserMessage, text_block};
    use serde_json::json;
    use std::path::PathBuf;
    use tokio::sync::mpsc;

    fn request(session: &str, prompt: &str) -> ModelRequest {
        ModelRequest {
            compact: false,
            session_id: session.into(),
            route: Route {
                provider: NAME.into(),
                model: ECHO.into(),
                reasoning_effort: None,
                max_tokens: None,
            },
            system: "sys".into(),
            messages: vec![KeptMessage::parsed(Message::User(UserMessage::new(
                vec![text_block(prompt)],
                json!({"kind": "user"}),
            )))],
            tools: Arc::new(Vec::new()),
        }
    }

    async fn settle(provider: &ScriptedProvider, request: ModelRequest) -> Settled {
        let (tx, mut rx) = mpsc::unbounded_channel();
        provider.start(request, tx);
        let mut acc = Accumulator::new();
        while let Some(chunk) = rx.recv().await {
            acc.push(&chunk);
        }
        acc.settle(NAME)
    }

    fn scenario_file(text: &str) -> (PathBuf, ScriptedProvider) {
        let path = std::env::temp_dir().join(format!("dsh-scenario-{}.yaml", uuid_like()));
        std::fs::write(&path, text).unwrap();
        let provider = ScriptedProvider::for_model(&path.to_string_lossy()).unwrap();
        (path, provider)
    }

    #[tokio::test]
    async fn echo_answers_with_the_prompt() {
        let provider = ScriptedProvider::for_model(ECHO).unwrap();
        let Settled::Message {
            content, finish, ..
        } = settle(&provider, request("s", "héllo")).await
        else {
            panic!("expected a message");
        };
        assert_eq!(content, vec![json!({"type": "text", "text": "héllo"})]);
        assert_eq!(finish, FinishReason::Stop);
    }

    #[tokio::test]
    async fn scenarios_play_in_order_per_session_then_run_out() {
        let (path, provider) = scenario_file(
            "replies:\n  - reasoning: think\n    text: [a, b]\n  - blocks:\n      - tool_call: {name: bash, arguments: {command: ls}}\n  - error: {code: SERVER, message: boom, status: 500}\n",
        );
        let Settled::Message { content, .. } = settle(&provider, request("s", "x")).await else {
            panic!()
        };
        assert_eq!(
            content,
            vec![
                json!({"type":"reasoning","text":"think"}),
                json!({"type":"text","text":"ab"})
            ]
        );
        let Settled::Message {
            content, finish, ..
        } = settle(&provider, request("s", "x")).await
        else {
            panic!()
        };
        assert_eq!(finish, FinishReason::ToolCalls);
        assert_eq!(content[0]["arguments"], json!("{\"command\":\"ls\"}"));
        let Settled::Failed(f) = settle(&provider, request("s", "x")).await else {
            panic!()
        };
        assert_eq!((f.code.as_str(), f.status), ("SERVER", Some(500)));
        let Settled::Failed(f) = settle(&provider, request("s", "x")).await else {
            panic!()
        };
        assert_eq!(f.code, "SCRIPT_EXHAUSTED");
        // Another session starts from the first reply.
        assert!(matches!(
            settle(&provider, request("t", "x")).await,
            Settled::Message { .. }
        ));
        let _ = std::fs::remove_file(path);
    }

    #[test]
    fn invalid_models_and_scenarios_are_refused_with_clear_errors() {
        let err = ScriptedProvider::for_model("nope")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("\"echo\" or the absolute path"), "{err}");
        let err = ScriptedProvider::for_model("/definitely/missing.yaml")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("scripted scenario /definitely/missing.yaml:"),
            "{err}"
        );
        let path = std::env::temp_dir().join(format!("dsh-bad-{}.yaml", uuid_like()));
        std::fs::write(
            &path,
            "replies:\n  - text: a\n    error: {code: X, message: y}\n",
        )
        .unwrap();
        let err = ScriptedProvider::for_model(&path.to_string_lossy())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("either content"), "{err}");
        let _ = std::fs::remove_file(path);
    }

    fn prompt(text: &str) -> Arc<Message> {
        Arc::new(Message::User(UserMessage::prompt(vec![text_block(text)])))
    }

    fn answer(text: &str) -> Arc<Message> {
        Arc::new(Message::Assistant(AssistantMessage::from_model(
            vec![text_block(text)],
            NAME,
            "m",
            None,
        )))
    }

    /// A request whose history is `messages`, packed (as a big resumed
    /// history is kept).
    fn with_history(session: &str, messages: Vec<Arc<Message>>) -> ModelRequest {
        ModelRequest {
            compact: false,
            messages: messages
                .into_iter()
                .map(|m| KeptMessage::packed(Arc::unwrap_or_clone(m)))
                .collect(),
            ..request(session, "")
        }
    }

    async fn text_of_reply(provider: &ScriptedProvider, request: ModelRequest) -> String {
        match settle(provider, request).await {
            Settled::Message { content, .. } => {
                content.iter().filter_map(|b| b["text"].as_str()).collect()
            }
            Settled::Failed(f) => format!("{}: {}", f.code, f.message),
        }
    }

    const AGENTS: &str = "replies:\n  - text: root-1\n  - text: root-2\nagents:\n  - when: TASK-A\n    replies:\n      - text: A-1\n      - text: A-2\n        delay_ms: 1\n  - when: TASK-B\n    replies:\n      - text: B-1\n";

    #[tokio::test]
    async fn agent_scripts_are_chosen_by_the_prompts_of_the_history() {
        let (path, provider) = scenario_file(AGENTS);
        // The root prompt plays the top-level replies.
        assert_eq!(
            text_of_reply(&provider, request("root", "go")).await,
            "root-1"
        );
        // A child whose prompt holds TASK-A plays A's replies in order, and
        // does not move the root's position.
        let a = vec![prompt("please TASK-A do x")];
        assert_eq!(
            text_of_reply(&provider, with_history("a", a.clone())).await,
            "A-1"
        );
        let mut a2 = a.clone();
        a2.extend([answer("A-1"), prompt("more")]);
        assert_eq!(text_of_reply(&provider, with_history("a", a2)).await, "A-2");
        assert_eq!(
            text_of_reply(&provider, request("root", "go")).await,
            "root-2"
        );
        // A fork child inherits the root's prompt and replies: they do not
        // count against B's script.
        let fork = vec![
            prompt("go"),
            answer("root-1"),
            answer("root-2"),
            prompt("TASK-B: check"),
        ];
        assert_eq!(
            text_of_reply(&provider, with_history("b", fork)).await,
            "B-1"
        );
        // Only user prompts choose: a TASK-A notice or reply does not.
        let notice = vec![
            prompt("go"),
            Arc::new(Message::User(UserMessage::notice(
                "subagent-result",
                vec![text_block("TASK-A finished")],
            ))),
            answer("TASK-A"),
        ];
        // The top-level script, after the one reply the history holds.
        assert_eq!(
            text_of_reply(&provider, with_history("fresh", notice)).await,
            "root-2"
        );
        let _ = std::fs::remove_file(path);
    }

    #[tokio::test]
    async fn an_exhausted_agent_script_names_itself() {
        let (path, provider) = scenario_file(AGENTS);
        let b = || with_history("b", vec![prompt("TASK-B")]);
        assert_eq!(text_of_reply(&provider, b()).await, "B-1");
        let Settled::Failed(f) = settle(&provider, b()).await else {
            panic!("expected exhaustion")
        };
        assert_eq!(f.code, "SCRIPT_EXHAUSTED");
        assert_eq!(
            f.message,
            format!(
                "scripted scenario {} has no reply 2 in its agent script \"TASK-B\" for session b",
                path.display()
            )
        );
        // A resumed A session whose history holds both of A's replies.
        let resumed = vec![
            prompt("TASK-A"),
            answer("A-1"),
            prompt("again"),
            answer("A-2"),
            prompt("once more"),
        ];
        let message = text_of_reply(&provider, with_history("r", resumed)).await;
        assert!(
            message.ends_with("has no reply 3 in its agent script \"TASK-A\" for session r"),
            "{message}"
        );
        let _ = std::fs::remove_file(path);
    }

    #[tokio::test]
    async fn unknown_user_content_is_unsupported() {
        let provider = ScriptedProvider::for_model(ECHO).unwrap();
        let mut req = request("s", "x");
        req.messages = vec![KeptMessage::parsed(Message::User(UserMessage::new(
            vec![json!({"type":"weird","x":1})],
            json!({"kind":"user"}),
        )))];
        let Settled::Failed(f) = settle(&provider, req).await else {
            panic!()
        };
        assert_eq!(f.code, "UNSUPPORTED_CONTENT");
        assert_eq!(
            f.message,
            "scripted provider cannot represent user content weird"
        );
    }
}
