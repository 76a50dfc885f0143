//! The offline, deterministic `scripted` provider.
//!
//! * Model `echo` answers every request with the text of the latest user
//!   prompt in the history.
//! * Model `<absolute path>` plays a scenario file: one reply per model
//!   request of a session, in order (a resumed session continues after the
//!   replies its history holds), from the script that claims the request.
//!
//! A scenario file is YAML (JSON is accepted too):
//!
//! ```yaml
//! replies:
//!   - text: "Hello"                      # one text block
//!   - reasoning: "Let me think"          # shorthand: reasoning, then text
//!     text: ["Hel", "lo"]                # a list is streamed as deltas
//!   - blocks:                            # explicit blocks, in order
//!       - text: "I will run a command."
//!       - tool_call: {id: call_1, name: bash, arguments: {command: "echo hi"}}
//!     stop: tool_use                     # end_turn | tool_use | max_tokens
//!   - error: {code: SERVER, message: "boom", status: 500}
//!     delay_ms: 300                      # any reply may wait first
//! agents:                                # optional: other agents' scripts
//!   - when: "TASK-A"                     # a substring of one of its prompts
//!     replies:                           # ordinary replies, as above
//!       - text: "A-OK"
//! ```
//!
//! Several agents (a session and its subagents) may ask at once, so each
//! agent can have its own script. A request is answered from the first
//! `agents` entry whose `when` occurs in the text of one of its history's
//! user prompts (`source.kind` `user`), else from the top-level `replies`.
//! Within a script the replies play in order per session; a session not yet
//! seen starts after the assistant messages its history holds, for an agent
//! script counting only those after the first prompt that matched `when` (a
//! forked child's inherited history does not use up its script). List the
//! more specific `when`s first: a fork child's history also holds its
//! parent's prompts.
//!
//! The shorthand `reasoning` and `text` come before any `blocks`; a reply
//! has content or an `error`, never both. `stop` defaults to `tool_use` when the reply has a tool call, else
//! `end_turn`. In tool-call `arguments`, `{{agent:N}}` stands for the id of
//! the N-th subagent the session started (from 0; read from its history's
//! `started subagent <id>` results) and `{{goal}}` for the id of the last
//! goal its tool results show, `{{job}}` for the last background job id
//! (`bash-…`, `workflow-…`) its messages show. Tool-call `arguments` given as a string are sent verbatim
//! (useful for truncated JSON under `max_tokens`). `usage: {input_tokens,
//! output_tokens}` overrides the default estimate (a quarter of the
//! characters). A request after the last reply fails with code
//! `SCRIPT_EXHAUSTED`, naming the script (`agent script "TASK-A"` or the
//! `top-level script`). `hostile: {kind: …}` (see [`Hostile`]) and
//! `search` (see [`SearchReply`]) are for the fake model server only.

use crate::LlmFailureCode;
use crate::{
    BlockType, ChunkSender, FinishReason, LlmFailure, ModelRequest, Provider, StreamChunk, Usage,
};
use dsh_protocol::message::KeptMessage;
use dsh_session::{Message, text_of};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod search;
mod select;
pub use search::{CitationSpec, SearchHitSpec, SearchReply, SearchTextSpec};
pub use select::{Script, ScriptKey};

/// Provider name.
pub const NAME: &str = "scripted";
/// The echo model.
pub const ECHO: &str = "echo";

/// Why a scripted model id cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScenarioError {
    /// Neither `echo` nor an absolute path.
    #[error("scripted model must be \"echo\" or the absolute path of a scenario file, got \"{0}\"")]
    NotAModel(String),
    /// The file cannot be read.
    #[error("scripted scenario {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not a valid scenario.
    #[error("scripted scenario {path}: {message}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
}

/// A parsed scenario: the root session's replies, in order, and the
/// scripts of other agents.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// One reply per model request no `agents` entry claims.
    pub replies: Vec<Reply>,
    /// Scripts for other agents, chosen by their prompts (see
    /// [`Scenario::script_for`]).
    #[serde(default)]
    pub agents: Vec<AgentScript>,
    /// Answers of the web search endpoint, played by the fake model server
    /// only (see [`SearchReply`]).
    #[serde(default)]
    pub search: Vec<SearchReply>,
}

/// The script of the agent whose prompt mentions `when`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentScript {
    /// A substring of one of the agent's user prompts (never empty).
    pub when: String,
    /// One reply per model request of the agent.
    pub replies: Vec<Reply>,
}

/// One scripted model reply.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    /// Shorthand: a text block (after `reasoning`, if both are given).
    #[serde(default)]
    pub text: Option<Text>,
    /// Shorthand: a reasoning block first.
    #[serde(default)]
    pub reasoning: Option<Text>,
    /// Explicit blocks.
    #[serde(default)]
    pub blocks: Vec<Block>,
    /// Stop reason; derived when absent.
    #[serde(default)]
    pub stop: Option<Stop>,
    /// Fail the request instead of answering.
    #[serde(default)]
    pub error: Option<ScriptedError>,
    /// Wait this long before answering.
    #[serde(default)]
    pub delay_ms: Option<u64>,
    /// Usage figures to report.
    #[serde(default)]
    pub usage: Option<ScriptedUsage>,
    /// End the stream cleanly after the first delta, without finishing the
    /// reply (`STREAM_CLOSED`).
    #[serde(default)]
    pub cut: bool,
    /// Break the connection after the first delta (`TRANSPORT`).
    #[serde(default)]
    pub reset: bool,
    /// Pause this long after the first delta (mid-stream).
    #[serde(default)]
    pub stall_ms: Option<u64>,
    /// A hostile reply, played only by the fake model server
    /// (`dsh-fake-model`); the in-process provider fails the attempt
    /// with `SCRIPT_UNSUPPORTED`.
    #[serde(default)]
    pub hostile: Option<Hostile>,
}

/// A hostile reply of the fake model server (issue 15's provider attacks).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Hostile {
    /// A 2xx stream of text deltas that never ends.
    EndlessText,
    /// An HTTP 500 whose body never ends.
    EndlessErrorBody,
    /// One text block sent as a single delta of `bytes` bytes.
    HugeDelta {
        /// Size of the delta's text.
        bytes: u64,
    },
    /// One tool call whose arguments are `arguments` with `field` set to a
    /// string of `bytes` bytes, streamed as two `input_json_delta`s.
    HugeToolCall {
        /// The tool called.
        name: String,
        /// The other arguments (an object).
        #[serde(default)]
        arguments: Map<String, Value>,
        /// The argument that carries the bulk.
        field: String,
        /// Its size in bytes.
        bytes: u64,
    },
}

/// Text given whole or as streamed deltas.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(untagged)]
pub enum Text {
    /// One delta.
    Whole(String),
    /// Several deltas.
    Deltas(Vec<String>),
}

impl Text {
    fn deltas(&self) -> Vec<String> {
        match self {
            Self::Whole(s) => vec![s.clone()],
            Self::Deltas(d) => d.clone(),
        }
    }
}

/// An explicit reply block: a map with exactly one of `text`, `reasoning`
/// or `tool_call`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Block {
    /// Visible text.
    #[serde(default)]
    pub text: Option<Text>,
    /// Model thinking.
    #[serde(default)]
    pub reasoning: Option<Text>,
    /// A tool call.
    #[serde(default)]
    pub tool_call: Option<ToolCall>,
}

/// A validated block.
#[derive(Debug, Clone, PartialEq)]
enum Part {
    Text(Text),
    Reasoning(Text),
    ToolCall(ToolCall),
}

impl Block {
    fn part(&self) -> Option<Part> {
        match (&self.text, &self.reasoning, &self.tool_call) {
            (Some(t), None, None) => Some(Part::Text(t.clone())),
            (None, Some(r), None) => Some(Part::Reasoning(r.clone())),
            (None, None, Some(c)) => Some(Part::ToolCall(c.clone())),
            _ => None,
        }
    }
}

/// A scripted tool call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// Call id; `call_<n>` when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments: a JSON value, or a string sent verbatim.
    #[serde(default)]
    pub arguments: Option<Value>,
}

/// Scripted stop reasons (the Messages API's names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// `stop`.
    EndTurn,
    /// `tool-calls`.
    ToolUse,
    /// `max-tokens`.
    MaxTokens,
}

/// A scripted failure.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedError {
    /// Failure code (`SERVER`, `AUTH`, …).
    pub code: String,
    /// Failure message.
    pub message: String,
    /// HTTP status to report.
    #[serde(default)]
    pub status: Option<u16>,
    /// Retry-after to report, in milliseconds.
    #[serde(default)]
    pub retry_after_ms: Option<u64>,
    /// A literal `retry-after` header value (instead of `retry_after_ms`),
    /// read as a real provider's header is: `"0"`, `"-1"`, `"soon"`, a date.
    #[serde(default)]
    pub retry_after: Option<String>,
    /// Request id to report.
    #[serde(default)]
    pub request_id: Option<String>,
    /// Provider error type for HTTP error bodies (`api_error`, …); derived
    /// from the status when absent.
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

/// Scripted usage figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedUsage {
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
}

impl Scenario {
    /// Reads and validates a scenario file.
    pub fn load(path: &Path) -> Result<Self, ScenarioError> {
        let text = std::fs::read_to_string(path).map_err(|source| ScenarioError::Read {
            path: path.to_owned(),
            source,
        })?;
        let invalid = |message: String| ScenarioError::Invalid {
            path: path.to_owned(),
            message,
        };
        let scenario: Self = serde_yaml_ng::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        check_replies(&scenario.replies, "").map_err(invalid)?;
        for (i, agent) in scenario.agents.iter().enumerate() {
            if agent.when.is_empty() {
                return Err(invalid(format!("agents[{i}] needs a non-empty `when`")));
            }
            check_replies(&agent.replies, &format!("agents[{i}] ")).map_err(invalid)?;
        }
        search::check(&scenario.search).map_err(invalid)?;
        Ok(scenario)
    }
}

/// Checks every reply of one script; `prefix` names the script in errors.
fn check_replies(replies: &[Reply], prefix: &str) -> Result<(), String> {
    for (i, reply) in replies.iter().enumerate() {
        let content = reply.text.is_some() || reply.reasoning.is_some() || !reply.blocks.is_empty();
        if content == reply.error.is_some() {
            return Err(format!(
                "{prefix}reply {} must have either content (text, reasoning, blocks) or an error",
                i + 1
            ));
        }
        if let Some(j) = reply.blocks.iter().position(|b| b.part().is_none()) {
            return Err(format!(
                "{prefix}reply {} block {} must have exactly one of text, reasoning or tool_call",
                i + 1,
                j + 1
            ));
        }
    }
    Ok(())
}

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
                reasoning: None,
                blocks: Vec::new(),
                stop: None,
                error: None,
                delay_ms: None,
                usage: None,
                cut: false,
                reset: false,
                stall_ms: None,
                hostile: None,
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

/// What a scripted tool call writes for "the id of the N-th subagent this
/// session started" (from 0): `{{agent:N}}`, replaced by the id its history
/// shows in the N-th `started subagent <id>` tool result.
const AGENT_PLACEHOLDER: &str = "{{agent:";

/// Replaces every `{{agent:N}}` in the reply's tool-call arguments.
fn substitute_agent_ids(reply: &mut Reply, messages: &[Arc<Message>]) {
    let ids: Vec<&str> = messages
        .iter()
        .filter_map(|m| match m.as_ref() {
            Message::Tool(t) => text_of(&t.content)
                .find_map(|text| text.strip_prefix("started subagent "))
                .map(str::trim),
            _ => None,
        })
        .collect();
    for block in &mut reply.blocks {
        if let Some(call) = &mut block.tool_call
            && let Some(arguments) = &mut call.arguments
        {
            replace_in(arguments, &ids);
        }
    }
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
        for block in &mut self.blocks {
            if let Some(call) = &mut block.tool_call
                && let Some(arguments) = &mut call.arguments
            {
                replace_placeholder_in(arguments, placeholder, with);
            }
        }
    }
}

fn replace_placeholder_in(value: &mut Value, placeholder: &str, with: &str) {
    match value {
        Value::String(text) if text.contains(placeholder) => {
            *text = text.replace(placeholder, with);
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| replace_placeholder_in(v, placeholder, with)),
        Value::Object(map) => map
            .values_mut()
            .for_each(|v| replace_placeholder_in(v, placeholder, with)),
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
fn history_job_id(messages: &[Arc<Message>]) -> Option<&str> {
    messages.iter().rev().find_map(|m| match m.as_ref() {
        Message::Tool(t) => text_of(&t.content).filter_map(last_job_id).last(),
        Message::User(u) => text_of(&u.content).filter_map(last_job_id).last(),
        _ => None,
    })
}

/// The last goal id the tool results of `messages` show.
fn history_goal_id(messages: &[Arc<Message>]) -> Option<&str> {
    messages.iter().rev().find_map(|m| match m.as_ref() {
        Message::Tool(t) => text_of(&t.content).filter_map(last_goal_id).last(),
        _ => None,
    })
}

fn replace_in(value: &mut Value, ids: &[&str]) {
    match value {
        Value::String(text) if text.contains(AGENT_PLACEHOLDER) => {
            for (n, id) in ids.iter().enumerate() {
                *text = text.replace(&format!("{AGENT_PLACEHOLDER}{n}}}}}"), id);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| replace_in(v, ids)),
        Value::Object(map) => map.values_mut().for_each(|v| replace_in(v, ids)),
        _ => {}
    }
}

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

/// The chunks of one reply, in order.
fn chunks(reply: &Reply, model: &str, input_estimate: u64) -> Vec<StreamChunk> {
    let mut out = Vec::new();
    if let Some(error) = &reply.error {
        let failure = LlmFailure {
            message: error.message.clone(),
            code: error.code.as_str().into(),
            status: error.status,
            provider_retry_after_ms: match &error.retry_after {
                Some(header) => crate::http::retry_after_ms(header, std::time::SystemTime::now()),
                None => error
                    .retry_after_ms
                    .and_then(|ms| crate::Millis::new(ms as f64)),
            },
            request_id: error.request_id.clone(),
        };
        out.push(StreamChunk::Finish {
            reason: FinishReason::Error { failure },
            replay_state: None,
        });
        return out;
    }
    let mut blocks = Vec::new();
    if let Some(reasoning) = &reply.reasoning {
        blocks.push(Part::Reasoning(reasoning.clone()));
    }
    if let Some(text) = &reply.text {
        blocks.push(Part::Text(text.clone()));
    }
    blocks.extend(reply.blocks.iter().filter_map(Block::part));

    let mut replay_blocks = Vec::new();
    let mut output_chars = 0usize;
    let mut has_tool_call = false;
    for (i, block) in blocks.iter().enumerate() {
        let index = u32::try_from(i).unwrap_or(u32::MAX);
        let (block_type, complete) = match block {
            Part::Text(text) | Part::Reasoning(text) => {
                let reasoning = matches!(block, Part::Reasoning(_));
                let deltas = text.deltas();
                let whole: String = deltas.concat();
                output_chars += whole.chars().count();
                let (block_type, name) = if reasoning {
                    (BlockType::Reasoning, "reasoning")
                } else {
                    (BlockType::Text, "text")
                };
                out.push(StreamChunk::BlockStart { index, block_type });
                for text in deltas {
                    let chunk = if reasoning {
                        StreamChunk::ReasoningDelta { index, text }
                    } else {
                        StreamChunk::TextDelta { index, text }
                    };
                    out.push(chunk);
                }
                (name, json!({"type": name, "text": whole}))
            }
            Part::ToolCall(call) => {
                has_tool_call = true;
                let id = call.id.clone().unwrap_or_else(|| format!("call_{}", i + 1));
                let arguments = match &call.arguments {
                    None => "{}".to_owned(),
                    Some(Value::String(raw)) => raw.clone(),
                    Some(value) => value.to_string(),
                };
                output_chars += arguments.chars().count();
                out.push(StreamChunk::BlockStart {
                    index,
                    block_type: BlockType::ToolCall,
                });
                out.push(StreamChunk::ToolCallDelta {
                    index,
                    id: id.clone(),
                    name: Some(call.name.clone()),
                    arguments_delta: String::new(),
                });
                out.push(StreamChunk::ToolCallDelta {
                    index,
                    id: id.clone(),
                    name: None,
                    arguments_delta: arguments.clone(),
                });
                (
                    "tool-call",
                    json!({"type": "tool-call", "id": id, "name": call.name, "arguments": arguments}),
                )
            }
        };
        out.push(StreamChunk::BlockEnd {
            index,
            block: complete,
        });
        replay_blocks.push(json!({"type": block_type}));
    }
    let usage = match reply.usage {
        Some(u) => Usage::new(u.input_tokens, u.output_tokens),
        None => Usage::new(input_estimate, quarter(output_chars)),
    };
    out.push(StreamChunk::Usage { usage });
    let reason = match reply.stop {
        Some(Stop::EndTurn) => FinishReason::Stop,
        Some(Stop::ToolUse) => FinishReason::ToolCalls,
        Some(Stop::MaxTokens) => FinishReason::MaxTokens,
        None if has_tool_call => FinishReason::ToolCalls,
        None => FinishReason::Stop,
    };
    let replay_state =
        json!({"response": {"kind": NAME, "version": 1, "model": model}, "blocks": replay_blocks});
    out.push(StreamChunk::Finish {
        reason,
        replay_state: Some(replay_state),
    });
    out
}

fn quarter(chars: usize) -> u64 {
    u64::try_from(chars.div_ceil(4)).unwrap_or(u64::MAX)
}

/// A quarter of the characters of the system prompt and every text block
/// of `messages`, the request's history.
fn estimate_input(request: &ModelRequest, messages: &[Arc<Message>]) -> u64 {
    let chars = |content: &[Value]| text_of(content).map(|t| t.chars().count()).sum::<usize>();
    let history: usize = messages
        .iter()
        .map(|m| match m.as_ref() {
            Message::User(u) => chars(&u.content),
            Message::System(s) => chars(&s.content),
            Message::Assistant(a) => chars(&a.content),
            Message::Tool(t) => chars(&t.content),
        })
        .sum();
    quarter(request.system.chars().count() + history)
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
    use crate::{Accumulator, Route, Settled};
    use dsh_session::{AssistantMessage, UserMessage, text_block};
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
        let arguments = reply.blocks[0]
            .tool_call
            .as_ref()
            .and_then(|c| c.arguments.clone());
        assert_eq!(
            arguments,
            Some(json!({"goal_id": a, "nested": [format!("x {a}")]}))
        );
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

    fn uuid_like() -> String {
        format!("{}-{:?}", std::process::id(), std::thread::current().id()).replace(['(', ')'], "")
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

    fn load_error(yaml: &str) -> String {
        let path = std::env::temp_dir().join(format!("dsh-agents-{}.yaml", uuid_like()));
        std::fs::write(&path, yaml).unwrap();
        let err = Scenario::load(&path)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        let _ = std::fs::remove_file(path);
        err
    }

    #[test]
    fn agent_scripts_are_validated_like_the_top_level_one() {
        let err = load_error("replies: []\nagents:\n  - when: \"\"\n    replies: [{text: a}]\n");
        assert!(err.ends_with("agents[0] needs a non-empty `when`"), "{err}");
        let err = load_error(
            "replies: []\nagents:\n  - when: A\n    replies: [{text: a}]\n  - when: B\n    replies:\n      - text: ok\n      - text: a\n        error: {code: X, message: y}\n",
        );
        assert!(
            err.ends_with(
                "agents[1] reply 2 must have either content (text, reasoning, blocks) or an error"
            ),
            "{err}"
        );
        let err = load_error(
            "replies: []\nagents:\n  - when: A\n    replies:\n      - blocks: [{text: a, reasoning: b}]\n",
        );
        assert!(
            err.ends_with(
                "agents[0] reply 1 block 1 must have exactly one of text, reasoning or tool_call"
            ),
            "{err}"
        );
        let err = load_error("replies: []\nagents:\n  - when: A\n    replies: []\n    extra: 1\n");
        assert!(err.contains("unknown field `extra`"), "{err}");
        let err = load_error("replies: []\nagents:\n  - when: A\n");
        assert!(err.contains("missing field `replies`"), "{err}");
        // Empty scripts stay allowed, at the top level as in an agent's.
        let path = std::env::temp_dir().join(format!("dsh-agents-ok-{}.yaml", uuid_like()));
        std::fs::write(
            &path,
            "replies: []\nagents:\n  - when: A\n    replies: []\n",
        )
        .unwrap();
        let scenario = Scenario::load(&path).unwrap();
        let _ = std::fs::remove_file(path);
        assert_eq!(scenario.agents.len(), 1);
        assert!(scenario.replies.is_empty() && scenario.agents[0].replies.is_empty());
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
