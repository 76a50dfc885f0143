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
//!
//! The scenario file's types and their validation are in `scenario` (the
//! failure a reply or search answer scripts in `failure`); the
//! provider that plays them in `provider`, the chunks a reply streams in
//! `stream`, the ids a tool call's arguments name in `placeholders`, the
//! choice of an agent's script in `select` and the search endpoint's
//! answers in `search`.

mod failure;
mod placeholders;
mod provider;
mod scenario;
mod search;
mod select;
mod stream;

pub use failure::ScriptedError;
pub use placeholders::{last_goal_id, last_job_id, started_agent_ids};
pub use provider::ScriptedProvider;
pub use scenario::{
    AgentScript, Block, Hostile, Reply, Scenario, ScenarioError, ScriptedUsage, Stop, Text,
    ToolCall,
};
pub use search::{CitationSpec, SearchHitSpec, SearchReply, SearchTextSpec};
pub use select::{Script, ScriptKey};

/// Provider name.
pub const NAME: &str = "scripted";
/// The echo model.
pub const ECHO: &str = "echo";

/// A name for a temporary scenario file no other test uses at once.
#[cfg(test)]
fn uuid_like() -> String {
    format!("{}-{:?}", std::process::id(), std::thread::current().id()).replace(['(', ')'], "")
}
