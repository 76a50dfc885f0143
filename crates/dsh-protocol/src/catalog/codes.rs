//! The stable failure codes: of model attempts ([`LlmFailureCode`]) and of
//! tool calls ([`ToolErrorCode`]). Each is written as its string; a code
//! this runtime does not know (read from another runtime's log) is kept.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// Declares a string code enum with an `Other` fallback.
macro_rules! codes {
    ($(#[$meta:meta])* $name:ident { $($(#[$vmeta:meta])* $variant:ident = $text:literal,)* }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)*
            /// A code not listed here, kept as written.
            Other(String),
        }

        impl $name {
            /// The code as written.
            pub fn as_str(&self) -> &str {
                match self {
                    $(Self::$variant => $text,)*
                    Self::Other(code) => code,
                }
            }
        }

        impl From<&str> for $name {
            fn from(code: &str) -> Self {
                match code {
                    $($text => Self::$variant,)*
                    other => Self::Other(other.to_owned()),
                }
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        // Written by hand: a code is its string, and a code not listed
        // (`Other`) is any other string.
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }

            fn schema_id() -> std::borrow::Cow<'static, str> {
                concat!(module_path!(), "::", stringify!($name)).into()
            }

            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "description": concat!(
                        "One of the listed codes, or a code this runtime does not know ",
                        "(read from another runtime's log), kept as written."
                    ),
                    "anyOf": [
                        {"enum": [$($text),*]},
                        {"type": "string"}
                    ]
                })
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let code = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                Ok(Self::from(code.as_ref()))
            }
        }
    };
}

codes! {
    /// Why a model attempt failed (`LlmFailure.code`).
    LlmFailureCode {
        /// The provider failed (HTTP 5xx, an `error` event).
        Server = "SERVER",
        /// HTTP 429 or a rate-limit error.
        RateLimit = "RATE_LIMIT",
        /// HTTP 401/403: the key was refused.
        Auth = "AUTH",
        /// HTTP 402 or an exhausted balance.
        Quota = "QUOTA",
        /// The request does not fit the model's context window.
        ContextWindowExceeded = "CONTEXT_WINDOW_EXCEEDED",
        /// The provider refused the request as malformed.
        InvalidRequest = "INVALID_REQUEST",
        /// No API key is configured.
        MissingCredential = "MISSING_CREDENTIAL",
        /// The API key cannot be sent in a header.
        InvalidCredential = "INVALID_CREDENTIAL",
        /// The connection failed.
        Transport = "TRANSPORT",
        /// The provider went silent or the request took too long.
        Timeout = "TIMEOUT",
        /// The stream ended before the reply did.
        StreamClosed = "STREAM_CLOSED",
        /// The reply could not be decoded, or outgrew its bound.
        MalformedResponse = "MALFORMED_RESPONSE",
        /// The reply ended without any content.
        EmptyResponse = "EMPTY_RESPONSE",
        /// The request holds content the provider cannot take.
        UnsupportedContent = "UNSUPPORTED_CONTENT",
        /// The scripted model has no reply left.
        ScriptExhausted = "SCRIPT_EXHAUSTED",
        /// The scripted model's script asks for something it cannot do.
        ScriptUnsupported = "SCRIPT_UNSUPPORTED",
        /// The session log cannot be written: the turn stops before any
        /// further request (not a model failure, but reported like one).
        SessionLogUnwritable = "SESSION_LOG_UNWRITABLE",
        /// Anything else.
        Unknown = "UNKNOWN",
    }
}

codes! {
    /// Why a tool call failed (`tool/result.data.error.code`).
    ToolErrorCode {
        /// No tool has the called name.
        UnknownTool = "UNKNOWN_TOOL",
        /// The path names no file.
        FsNotFound = "FS_NOT_FOUND",
        /// The path is not a regular file (a device, a FIFO, a directory).
        FsNotRegularFile = "FS_NOT_REGULAR_FILE",
        /// The file is larger than the tool reads.
        FsTooLarge = "FS_TOO_LARGE",
        /// The file is not text: a NUL byte near its start, or invalid UTF-8.
        FsNotText = "FS_NOT_TEXT",
        /// `write` or `edit` of a file the session has not read.
        FsNotObserved = "FS_NOT_OBSERVED",
        /// The file changed (or went away) since the session read it.
        FsStaleVersion = "FS_STALE_VERSION",
        /// `edit`: `old_string` does not occur in the file.
        FsEditNotFound = "FS_EDIT_NOT_FOUND",
        /// `edit`: `old_string` occurs more than once and `replace_all` is not set.
        FsAmbiguousEdit = "FS_AMBIGUOUS_EDIT",
        /// The session's sandbox mode does not allow the change.
        FsSandboxDenied = "FS_SANDBOX_DENIED",
        /// `glob` or `grep`: the search itself failed (a path that cannot be
        /// searched).
        SearchFailed = "SEARCH_FAILED",
        /// `glob` or `grep`: the pattern or the include glob does not parse.
        SearchInvalidPattern = "SEARCH_INVALID_PATTERN",
        /// The session log cannot be written, so the tool was not run.
        SessionLogUnwritable = "SESSION_LOG_UNWRITABLE",
        /// The call was dispatched and its outcome was never recorded.
        ToolOutcomeUnknown = "TOOL_OUTCOME_UNKNOWN",
        /// The call was never dispatched.
        ToolNotStarted = "TOOL_NOT_STARTED",
        /// The call was stopped because its turn was interrupted.
        Aborted = "ABORTED",
        /// The agent named is not one this agent may address.
        NotResumable = "NOT_RESUMABLE",
        /// The agent may not do this to the agent named (itself, another
        /// parent's child).
        Unauthorized = "UNAUTHORIZED",
        /// As many children as a parent may run are running.
        ActivationLimitReached = "ACTIVATION_LIMIT_REACHED",
        /// The arguments do not fit the tool's schema.
        InvalidArgs = "INVALID_ARGS",
        /// The goal named is not the current goal at that revision.
        GoalStaleRevision = "GOAL_STALE_REVISION",
        /// A goal that is not complete exists already.
        GoalAlreadyExists = "GOAL_ALREADY_EXISTS",
        /// There is no goal.
        GoalNotFound = "GOAL_NOT_FOUND",
        /// The objective is empty (or too long).
        GoalInvalidObjective = "GOAL_INVALID_OBJECTIVE",
        /// The round limit is not a positive safe integer.
        GoalInvalidMaxRounds = "GOAL_INVALID_MAX_ROUNDS",
        /// An edit that changes nothing.
        GoalInvalidEdit = "GOAL_INVALID_EDIT",
        /// The action does not apply to the goal's phase.
        GoalInvalidTransition = "GOAL_INVALID_TRANSITION",
        /// The model tried to resume a goal a person paused.
        GoalToolResumePaused = "GOAL_TOOL_RESUME_PAUSED",
        /// The update's fields do not fit its action.
        GoalToolInvalidUpdate = "GOAL_TOOL_INVALID_UPDATE",
        /// The turn may not make this goal change.
        GoalToolAuthorityRequired = "GOAL_TOOL_AUTHORITY_REQUIRED",
        /// A round reported the goal blocked too early.
        GoalToolBlockThreshold = "GOAL_TOOL_BLOCK_THRESHOLD",
        /// The call ran past its time limit.
        ToolTimeout = "TOOL_TIMEOUT",
        /// The web search provider failed or gave an unusable answer.
        WebProviderError = "WEB_PROVIDER_ERROR",
        /// The web search provider has no API key.
        WebProviderCredentialMissing = "WEB_PROVIDER_CREDENTIAL_MISSING",
        /// A workflow script that does not parse.
        ScriptParse = "SCRIPT_PARSE",
        /// A workflow's `meta` that does not fit its rules.
        MetaInvalid = "META_INVALID",
    }
}

impl ToolErrorCode {
    /// The error class name written next to the code (`error.name`).
    pub fn class_name(&self) -> &'static str {
        match self {
            Self::UnknownTool => "ToolNotFoundError",
            Self::FsNotFound
            | Self::FsNotRegularFile
            | Self::FsTooLarge
            | Self::FsNotText
            | Self::FsNotObserved
            | Self::FsStaleVersion
            | Self::FsEditNotFound
            | Self::FsAmbiguousEdit
            | Self::FsSandboxDenied => "FsError",
            Self::SearchFailed | Self::SearchInvalidPattern => "SearchError",
            Self::SessionLogUnwritable => "SessionLogError",
            Self::ToolOutcomeUnknown => "ToolOutcomeUnknownError",
            Self::ToolNotStarted => "ToolNotStartedError",
            Self::Aborted => "AbortError",
            Self::NotResumable | Self::Unauthorized | Self::ActivationLimitReached => {
                "SubagentError"
            }
            Self::InvalidArgs => "ToolArgsError",
            Self::GoalStaleRevision
            | Self::GoalAlreadyExists
            | Self::GoalNotFound
            | Self::GoalInvalidObjective
            | Self::GoalInvalidMaxRounds
            | Self::GoalInvalidEdit
            | Self::GoalInvalidTransition => "GoalError",
            Self::GoalToolResumePaused
            | Self::GoalToolInvalidUpdate
            | Self::GoalToolAuthorityRequired
            | Self::GoalToolBlockThreshold => "HarnessError",
            Self::ToolTimeout => "ToolTimeoutError",
            Self::WebProviderError | Self::WebProviderCredentialMissing => "WebError",
            Self::ScriptParse | Self::MetaInvalid => "WorkflowError",
            Self::Other(_) => "ToolError",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_keep_unknown_ones() {
        let code: LlmFailureCode = serde_json::from_str(r#""RATE_LIMIT""#).unwrap();
        assert_eq!(code, LlmFailureCode::RateLimit);
        let code: LlmFailureCode = serde_json::from_str(r#""HTTP_418""#).unwrap();
        assert_eq!(code, LlmFailureCode::Other("HTTP_418".into()));
        assert_eq!(serde_json::to_string(&code).unwrap(), r#""HTTP_418""#);
        assert_eq!(ToolErrorCode::from("FS_TOO_LARGE").class_name(), "FsError");
        assert_eq!(
            ToolErrorCode::ToolNotStarted.to_string(),
            "TOOL_NOT_STARTED"
        );
        assert_eq!(
            ToolErrorCode::from("WEB_PROVIDER_ERROR").class_name(),
            "WebError"
        );
        assert_eq!(ToolErrorCode::ToolTimeout.class_name(), "ToolTimeoutError");
        assert_eq!(
            ToolErrorCode::from("FS_STALE_VERSION").class_name(),
            "FsError"
        );
        assert_eq!(
            ToolErrorCode::from("SEARCH_FAILED").class_name(),
            "SearchError"
        );
    }
}
