//! The event catalogue: every session event type this runtime writes or
//! reads, as one payload struct per type with its `KIND`, the [`Event`]
//! enum readers match on (with a raw fallback for types it does not know),
//! the one envelope ([`SessionEvent`]) and the one draft ([`EventDraft`]).
//!
//! It lives in `dsh-protocol`, not in the store: events are what
//! `session.event` carries on the wire, and a client (`dsh-client`,
//! `dsh headless`) reads them without the store's files, locks and zstd.
//! The store (`dsh-session`) writes and reads the same types.
//!
//! Every struct serialises its fields in the official key order; writers
//! that must not copy a large payload use a struct's generic parameters to
//! borrow (`ToolCall<&str>`, `AssistantMessageEvent<&AssistantMessage, _>`).
//!
//! # Adding an event type
//!
//! 1. a payload struct in the family module, fields in the official order;
//! 2. `kind!(Struct, "family/name")` next to it;
//! 3. a variant in the `catalogue!` list below;
//! 4. writers append `EventDraft::new(payload)`; readers match `Event::Variant`.

mod codes;
mod compaction;
mod envelope;
mod goal;
mod hooks;
mod inbox;
mod llm;
mod session;
mod subagent;
mod tool;
mod tool_events;
mod turn;
mod workflow;

pub use codes::{LlmFailureCode, ToolErrorCode};
pub use compaction::{CompactionEnd, CompactionStart, CompactionSummary, SeqRange};
pub use envelope::{AppendOp, EventDraft, RangeOp, SessionEvent, SurfaceOp, ignorable};
pub use goal::{
    BlockedCode, BlockedReason, GoalChange, GoalChangeKind, GoalOperation, GoalPhase, GoalSnapshot,
};
pub use hooks::{HookRunEvent, HookSource, HooksLoaded};
pub use inbox::{InboxSpliced, InboxTarget, SpliceOutcome};
pub use llm::{LlmFailure, LlmRetry, LlmRetryStarted, Millis, RetryMode, Usage};
pub use session::{
    ApprovalPolicy, HeaderReason, PermissionPreset, RequestContext, RequestHeader,
    RequestHeaderBody, SandboxMode, SessionEndSeed, SessionTitle, TitleSource,
    WorkingDirectoryChange,
};
pub use subagent::{SubagentCatalog, SubagentDescriptor, SubagentMode, SubagentProvider};
pub use tool::{ToolCall, ToolError, ToolResult, ToolSpec};
pub use tool_events::{
    ApprovalAsked, ApprovalDecided, ApprovalDecider, ApprovalOutcome, ApprovalScope,
    DeepSeekSearchRequest, JobRegistered, JobSettled, JobStatus, JobToolCall, SettleCause, Todo,
    TodoStatus, TodoWrite, ToolEvent,
};
pub use turn::{
    AbortReason, AssistantAttempt, AssistantMessageEvent, BudgetLimit, StepEnd, StepStart,
    SystemMessageEvent, TurnEnd, TurnEndReason, TurnStart,
};
pub use workflow::{
    WorkflowAgentEnd, WorkflowAgentOutcome, WorkflowAgentStart, WorkflowRunEnd, WorkflowRunStart,
    WorkflowStopReason,
};

use crate::message::UserMessage;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// A payload struct's event type (`turn/start`, …).
pub trait EventKind {
    /// The event type, as in the envelope's `type`.
    const KIND: &'static str;
}

impl<T: EventKind> EventKind for &T {
    const KIND: &'static str = T::KIND;
}

/// What an [`EventDraft`] can carry: a payload that knows its event type.
/// Every [`EventKind`] struct is one; so are [`Event`] and [`ToolEvent`],
/// whose type depends on the variant.
pub trait EventPayload: Serialize {
    /// The event type.
    fn kind(&self) -> &str;
}

impl<T: EventKind + Serialize> EventPayload for T {
    fn kind(&self) -> &str {
        T::KIND
    }
}

/// Implements [`EventKind`] for a payload struct.
macro_rules! kind {
    ($ty:ident, $kind:literal) => {
        impl $crate::catalog::EventKind for $ty {
            const KIND: &'static str = $kind;
        }
    };
    ($ty:ident<$($p:ident),+>, $kind:literal) => {
        impl<$($p),+> $crate::catalog::EventKind for $ty<$($p),+> {
            const KIND: &'static str = $kind;
        }
    };
}
use kind;

/// Schema transform of an enum tagged by `kind` with a `#[serde(other)]`
/// variant: that variant's alternative takes any `kind` not listed (as
/// serde reads it), where the derive would allow only `"other"`.
fn other_kind(schema: &mut schemars::Schema) {
    let Some(Value::Array(variants)) = schema.get_mut("oneOf") else {
        return;
    };
    let is_other = |variant: &Value| {
        variant
            .pointer("/properties/kind/const")
            .is_some_and(|kind| kind == "other")
    };
    let known: Vec<Value> = variants
        .iter()
        .filter(|variant| !is_other(variant))
        .filter_map(|variant| variant.pointer("/properties/kind/const"))
        .cloned()
        .collect();
    for variant in variants.iter_mut().filter(|variant| is_other(variant)) {
        if let Some(kind) = variant.pointer_mut("/properties/kind") {
            *kind = serde_json::json!({"type": "string", "not": {"enum": known}});
        }
    }
}

/// An event whose type this runtime does not know (written by a newer
/// runtime): kept as it was read, so the log still loads and resumes.
#[derive(Debug, Clone, PartialEq)]
pub struct RawEvent {
    /// The event type.
    pub kind: String,
    /// The payload, as read.
    pub data: Value,
}

/// Declares [`Event`] over the payload types of the catalogue.
macro_rules! catalogue {
    ($($(#[$doc:meta])* $variant:ident($ty:ty),)*) => {
        /// A session event's payload, typed by its event type.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            $($(#[$doc])* $variant($ty),)*
            /// A type not in the catalogue.
            Unknown(RawEvent),
        }

        impl Event {
            /// The payload of a `kind` event; an unknown kind is kept raw, a
            /// known kind whose payload does not fit its type is an error.
            pub fn parse(kind: &str, data: &Value) -> Result<Self, serde_json::Error> {
                $(if kind == <$ty as EventKind>::KIND {
                    return <$ty>::deserialize(data).map(Self::$variant);
                })*
                Ok(Self::Unknown(RawEvent {
                    kind: kind.to_owned(),
                    data: data.clone(),
                }))
            }
        }

        impl Event {
            /// Every event type of the catalogue, in its order.
            pub const KINDS: &'static [&'static str] = &[$(<$ty as EventKind>::KIND,)*];

            /// Every event type of the catalogue with the JSON Schema of its
            /// payload, in catalogue order; the definitions the schemas refer
            /// to are left in `generator`.
            pub(crate) fn payload_schemas(
                generator: &mut schemars::SchemaGenerator,
            ) -> Vec<(&'static str, schemars::Schema)> {
                vec![$((<$ty as EventKind>::KIND, generator.subschema_for::<$ty>()),)*]
            }
        }

        impl Event {
            /// [`Event::parse`] from the payload's JSON text, without an
            /// intermediate [`Value`].
            pub fn parse_str(kind: &str, data: &str) -> Result<Self, serde_json::Error> {
                $(if kind == <$ty as EventKind>::KIND {
                    return serde_json::from_str::<$ty>(data).map(Self::$variant);
                })*
                Ok(Self::Unknown(RawEvent {
                    kind: kind.to_owned(),
                    data: serde_json::from_str(data)?,
                }))
            }
        }

        impl EventPayload for Event {
            fn kind(&self) -> &str {
                match self {
                    $(Self::$variant(_) => <$ty as EventKind>::KIND,)*
                    Self::Unknown(raw) => &raw.kind,
                }
            }
        }

        impl Serialize for Event {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    $(Self::$variant(data) => data.serialize(serializer),)*
                    Self::Unknown(raw) => raw.data.serialize(serializer),
                }
            }
        }
    };
}

catalogue! {
    /// `agent/inbox/spliced`.
    InboxSpliced(InboxSpliced),
    /// `turn/start`.
    TurnStart(TurnStart),
    /// `turn/end`.
    TurnEnd(TurnEnd),
    /// `step/start`.
    StepStart(StepStart),
    /// `step/end`.
    StepEnd(StepEnd),
    /// `system/message`.
    SystemMessage(SystemMessageEvent),
    /// `user/message`: the payload is the message.
    UserMessage(UserMessage),
    /// `assistant/message`.
    AssistantMessage(AssistantMessageEvent),
    /// `assistant/attempt`.
    AssistantAttempt(AssistantAttempt),
    /// `request/header`.
    RequestHeader(RequestHeader),
    /// `request/context`.
    RequestContext(RequestContext),
    /// `session/title`.
    SessionTitle(SessionTitle),
    /// `session/end-seed`.
    SessionEndSeed(SessionEndSeed),
    /// `tool/call`.
    ToolCall(ToolCall),
    /// `tool/result`.
    ToolResult(ToolResult),
    /// `working-directory/change`.
    WorkingDirectoryChange(WorkingDirectoryChange),
    /// `permission/preset`.
    PermissionPreset(PermissionPreset),
    /// `sandbox/mode`.
    SandboxMode(SandboxMode),
    /// `approval/policy`.
    ApprovalPolicy(ApprovalPolicy),
    /// `llm/retry`.
    LlmRetry(LlmRetry),
    /// `llm/retry-started`.
    LlmRetryStarted(LlmRetryStarted),
    /// `job/registered`.
    JobRegistered(JobRegistered),
    /// `job/settled`.
    JobSettled(JobSettled),
    /// `todo/write`.
    TodoWrite(TodoWrite),
    /// `approval/asked`.
    ApprovalAsked(ApprovalAsked),
    /// `compaction/start`.
    CompactionStart(CompactionStart),
    /// `compaction/summary`.
    CompactionSummary(CompactionSummary),
    /// `compaction/end`.
    CompactionEnd(CompactionEnd),
    /// `approval/decided`.
    ApprovalDecided(ApprovalDecided),
    /// `subagent/descriptor`.
    SubagentDescriptor(SubagentDescriptor),
    /// `subagent/catalog`.
    SubagentCatalog(SubagentCatalog),
    /// `goal/change`.
    GoalChange(GoalChange),
    /// `web/deepseek-search-llm-request`.
    DeepSeekSearchRequest(DeepSeekSearchRequest),
    /// `tool-workflow/run-start`.
    WorkflowRunStart(WorkflowRunStart),
    /// `tool-workflow/agent-start`.
    WorkflowAgentStart(WorkflowAgentStart),
    /// `tool-workflow/agent-end`.
    WorkflowAgentEnd(WorkflowAgentEnd),
    /// `tool-workflow/run-end`.
    WorkflowRunEnd(WorkflowRunEnd),
    /// `dsh/hooks-loaded` (dsh's extension).
    HooksLoaded(HooksLoaded),
    /// `dsh/hook-run` (dsh's extension).
    HookRun(HookRunEvent),
}
