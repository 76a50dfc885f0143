//! A scenario file: its replies and agent scripts, read and validated.

use super::failure::ScriptedError;
use super::search::{self, SearchReply};
use serde::Deserialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};

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
    /// Pause this long after every delta (a slowly streamed reply).
    #[serde(default)]
    pub delta_gap_ms: Option<u64>,
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
    pub(super) fn deltas(&self) -> Vec<String> {
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
pub(super) enum Part {
    Text(Text),
    Reasoning(Text),
    ToolCall(ToolCall),
}

impl Block {
    pub(super) fn part(&self) -> Option<Part> {
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

/// Scripted usage figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptedUsage {
    /// Prompt tokens not served from the context cache.
    pub input_tokens: u64,
    /// Generated tokens.
    pub output_tokens: u64,
    /// Prompt tokens served from the context cache (reported as
    /// `cache_read_input_tokens` on the Messages API,
    /// `prompt_cache_hit_tokens` on the chat API).
    #[serde(default)]
    pub cache_hit_tokens: Option<u64>,
    /// Of the generated tokens, reasoning tokens (chat API only:
    /// `completion_tokens_details.reasoning_tokens`).
    #[serde(default)]
    pub reasoning_tokens: Option<u64>,
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
        let content = reply.text.is_some()
            || reply.reasoning.is_some()
            || !reply.blocks.is_empty()
            || reply.hostile.is_some();
        if content == reply.error.is_some() {
            return Err(format!(
                "{prefix}reply {} must have either content (text, reasoning, blocks, hostile) or an error",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scripted::uuid_like;

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
                "agents[1] reply 2 must have either content (text, reasoning, blocks, hostile) or an error"
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
}
