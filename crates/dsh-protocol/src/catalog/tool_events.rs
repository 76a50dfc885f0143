//! Events tools emit while they run: background jobs, the todo list,
//! approval requests and web search requests. [`ToolEvent`] is what a tool
//! host accepts.

use super::{EventPayload, kind};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// `job/registered {jobId, owner, kind, label, startedAt, toolCall}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobRegistered {
    /// `bash-<16 hex>` or `workflow-<16 hex>`.
    pub job_id: String,
    /// The session that owns the job.
    pub owner: String,
    /// `bash` or `workflow`.
    pub kind: String,
    /// The command, as shown (a workflow's name).
    pub label: String,
    /// Start time, epoch ms.
    pub started_at: u64,
    /// The call that started it.
    pub tool_call: JobToolCall,
}
kind!(JobRegistered, "job/registered");

/// `job/registered.toolCall {callId, rootCallId}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobToolCall {
    /// The call.
    pub call_id: String,
    /// The call at the root of the delegation tree (the same call here).
    pub root_call_id: String,
}

/// `job/settled`: the registration's fields, then `{finishedAt, status,
/// cause, producerReported, detail}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSettled {
    /// As registered.
    #[serde(flatten)]
    pub job: JobRegistered,
    /// End time, epoch ms.
    pub finished_at: u64,
    /// `completed` (exited) or `failed`.
    pub status: JobStatus,
    /// Who settled it.
    pub cause: SettleCause,
    /// Whether the producer reported the end itself.
    pub producer_reported: bool,
    /// `exit code: 0`, `signal: 9`, …
    pub detail: String,
}
kind!(JobSettled, "job/settled");

/// `job/settled.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum JobStatus {
    /// The command exited (with any code).
    Completed,
    /// It was killed, or could not run (a `bash` job); a workflow that
    /// ended with an error.
    Failed,
    /// A workflow stopped on request (`job_kill`).
    Killed,
}

impl JobStatus {
    /// The status as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Killed => "killed",
        }
    }
}

/// `job/settled.cause`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SettleCause {
    /// The job's own process ended.
    Producer,
    /// It was stopped on request (`job_kill`).
    Kill,
}

/// `todo/write {todos}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct TodoWrite {
    /// The whole list, as saved.
    pub todos: Vec<Todo>,
}
kind!(TodoWrite, "todo/write");

/// One item of the todo list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Todo {
    /// What the step is.
    pub content: String,
    /// Where it stands.
    pub status: TodoStatus,
}

/// The state of a todo item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TodoStatus {
    /// Not started.
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

/// `approval/asked {id, toolName, callId, reason}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalAsked {
    /// The request's id.
    pub id: String,
    /// The tool asking.
    pub tool_name: String,
    /// Its call.
    pub call_id: String,
    /// Why it asks.
    pub reason: String,
}
kind!(ApprovalAsked, "approval/asked");

/// `approval/decided {id, outcome, decidedBy?, scope?, message?}` (the
/// last three are dsh's, present only when a rule, a grant or a client
/// decided).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalDecided {
    /// The request decided.
    pub id: String,
    /// How.
    pub outcome: ApprovalOutcome,
    /// Who decided, when it was not the official "no approver" case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<ApprovalDecider>,
    /// For an approval: whether it holds for this call or the session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ApprovalScope>,
    /// The client's message with a rejection, or why it was decided so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
kind!(ApprovalDecided, "approval/decided");

impl ApprovalDecided {
    /// The official outcome: no approver, failed closed.
    pub fn unavailable(id: String) -> Self {
        Self {
            id,
            outcome: ApprovalOutcome::Unavailable,
            decided_by: None,
            scope: None,
            message: None,
        }
    }
}

/// `approval/decided.outcome`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalOutcome {
    /// No approver exists (or it cannot answer): the request failed
    /// closed.
    Unavailable,
    /// Allowed: the call runs with the access it asked for.
    Approved,
    /// Refused (by the client, a rule, a timeout or an error answer).
    Rejected,
    /// The turn was cancelled, or the runtime shut down, while it waited.
    Cancelled,
}

/// `approval/decided.decidedBy`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalDecider {
    /// The client answered `approval/request` (or failed to: timeout,
    /// error, closed input).
    Client,
    /// A policy rule matched.
    Rule,
    /// An earlier `allow-session` answer covers it.
    SessionGrant,
    /// `session/cancel` or shutdown ended the wait.
    Runtime,
}

/// `approval/decided.scope` of an approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalScope {
    /// This call only.
    Once,
    /// This call and the session's later ones of the same tool and access.
    Session,
}

/// `web/deepseek-search-llm-request {endpoint, apiVersion, body}`: one
/// web search request, recorded before it is sent (never its key).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeepSeekSearchRequest {
    /// The URL the request is posted to.
    pub endpoint: String,
    /// The `anthropic-version` header sent.
    pub api_version: String,
    /// The request body.
    pub body: Value,
}
kind!(DeepSeekSearchRequest, "web/deepseek-search-llm-request");

/// An event a tool emits through its host.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolEvent {
    /// A background job started.
    JobRegistered(JobRegistered),
    /// A job ended.
    JobSettled(JobSettled),
    /// The todo list was saved.
    TodoWrite(TodoWrite),
    /// A wider sandbox was asked for.
    ApprovalAsked(ApprovalAsked),
    /// The request was decided.
    ApprovalDecided(ApprovalDecided),
    /// A web search request is about to be sent.
    DeepSeekSearchRequest(DeepSeekSearchRequest),
}

impl EventPayload for ToolEvent {
    fn kind(&self) -> &str {
        match self {
            Self::JobRegistered(data) => data.kind(),
            Self::JobSettled(data) => data.kind(),
            Self::TodoWrite(data) => data.kind(),
            Self::ApprovalAsked(data) => data.kind(),
            Self::ApprovalDecided(data) => data.kind(),
            Self::DeepSeekSearchRequest(data) => data.kind(),
        }
    }
}

impl Serialize for ToolEvent {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::JobRegistered(data) => data.serialize(serializer),
            Self::JobSettled(data) => data.serialize(serializer),
            Self::TodoWrite(data) => data.serialize(serializer),
            Self::ApprovalAsked(data) => data.serialize(serializer),
            Self::ApprovalDecided(data) => data.serialize(serializer),
            Self::DeepSeekSearchRequest(data) => data.serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Event;

    #[test]
    fn a_search_request_event_round_trips_in_the_official_key_order() {
        // As the official runtime 0.2.1rc2 wrote it (probe, fake endpoint).
        let official = r#"{"endpoint":"http://127.0.0.1:41795/messages","apiVersion":"2023-06-01","body":{"model":"deepseek-v4-flash","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"q"}]}],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}],"thinking":{"type":"disabled"}}}"#;
        let value: Value = serde_json::from_str(official).unwrap();
        let event = Event::parse("web/deepseek-search-llm-request", &value).unwrap();
        let Event::DeepSeekSearchRequest(request) = &event else {
            panic!("not typed: {event:?}");
        };
        assert_eq!(request.api_version, "2023-06-01");
        assert_eq!(serde_json::to_string(request).unwrap(), official);
        let emitted = ToolEvent::DeepSeekSearchRequest(request.clone());
        assert_eq!(emitted.kind(), "web/deepseek-search-llm-request");
        assert_eq!(serde_json::to_string(&emitted).unwrap(), official);
    }
}
