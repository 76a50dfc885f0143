//! Why a delegation tool refused, mapped once to its tool result (the
//! official runtime's texts and codes where it was observed).

use dsh_protocol::catalog::ToolErrorCode;
use dsh_tools::ToolOutput;
use serde_json::Value;

/// A refused delegation call.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DelegationError {
    /// The arguments do not fit the schema (`INVALID_ARGS`).
    #[error("Error: invalid arguments: {0}")]
    InvalidArgs(String),
    /// No agent this one may address has the id (`NOT_RESUMABLE`).
    #[error("Error: subagent {} is unavailable", quoted(.0))]
    Unavailable(String),
    /// A message to the sender itself (`UNAUTHORIZED`).
    #[error("Error: subagent {} belongs to another parent session", quoted(.0))]
    NotAChild(String),
    /// An interrupt of the caller itself (`UNAUTHORIZED`).
    #[error("Error: agent {} cannot interrupt itself", quoted(.0))]
    SelfInterrupt(String),
    /// A child would be nested deeper than allowed (no code, as observed).
    #[error("Error: subagent depth {depth} exceeds maxDepth {max}")]
    TooDeep {
        /// The depth the child would have.
        depth: u64,
        /// The limit.
        max: u64,
    },
    /// As many children run as allowed (`ACTIVATION_LIMIT_REACHED`).
    #[error(
        "Error: subagent limit reached (active child limit: {0}); wait for an existing child to finish or complete this work with the current agents"
    )]
    TooMany(usize),
    /// This runtime has no session host (`SUBAGENT_UNAVAILABLE`).
    #[error("Error: this runtime cannot start subagents here (no session host is available)")]
    NoHost,
    /// Creating the child failed (`SUBAGENT_START_FAILED`).
    #[error("Error: the subagent was not started: {0}")]
    StartFailed(String),
}

fn quoted(id: &str) -> String {
    Value::from(id).to_string()
}

impl From<DelegationError> for ToolOutput {
    fn from(err: DelegationError) -> Self {
        let code = match &err {
            DelegationError::InvalidArgs(_) => Some(ToolErrorCode::InvalidArgs),
            DelegationError::Unavailable(_) => Some(ToolErrorCode::NotResumable),
            DelegationError::NotAChild(_) | DelegationError::SelfInterrupt(_) => {
                Some(ToolErrorCode::Unauthorized)
            }
            DelegationError::TooDeep { .. } => None,
            DelegationError::TooMany(_) => Some(ToolErrorCode::ActivationLimitReached),
            DelegationError::NoHost => Some(ToolErrorCode::from("SUBAGENT_UNAVAILABLE")),
            DelegationError::StartFailed(_) => Some(ToolErrorCode::from("SUBAGENT_START_FAILED")),
        };
        let output = ToolOutput::failure(err.to_string());
        match code {
            Some(code) => output.with_error(code),
            None => output,
        }
    }
}

/// Parses a delegation tool's arguments (an empty text is `{}`).
pub(crate) fn parse<T: for<'de> serde::Deserialize<'de>>(
    arguments: &str,
) -> Result<T, DelegationError> {
    serde_json::from_str(crate::tool_args::or_empty_object(arguments)).map_err(|err| {
        let text = err.to_string();
        DelegationError::InvalidArgs(if text.contains("unknown variant") {
            "\"scope\" must be one of [\"children\",\"descendants\"]".to_owned()
        } else {
            text
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_carry_the_official_texts_and_codes() {
        let out = ToolOutput::from(DelegationError::TooMany(8));
        assert!(out.is_error);
        assert_eq!(
            out.error.as_ref().map(|e| e.code.as_str()),
            Some("ACTIVATION_LIMIT_REACHED")
        );
        let out = ToolOutput::from(DelegationError::TooDeep { depth: 2, max: 1 });
        assert_eq!(
            out.text_content(),
            "Error: subagent depth 2 exceeds maxDepth 1"
        );
        assert!(out.error.is_none());
        let out = ToolOutput::from(DelegationError::Unavailable("x".into()));
        assert_eq!(out.text_content(), "Error: subagent \"x\" is unavailable");
        let bad: Result<serde_json::Value, _> = parse("{");
        assert!(matches!(bad, Err(DelegationError::InvalidArgs(_))));
    }
}
