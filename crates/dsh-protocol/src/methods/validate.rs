//! Params validation. Fields are read without coercion; each check has the
//! official message and the checks run in the official order, so the first
//! failing one is the one reported.

use super::{
    DEFAULT_MODEL, DEFAULT_PROVIDER, InitializeParams, PromptParams, SESSION_PROMPT,
    SESSION_RESUME, SessionParams, SetWorkingDirectoryParams,
};
use crate::JsonObject;
use serde_json::Value;

/// Why a request's params were refused. The `Display` text is the wire
/// message, which the Python SDK shows users verbatim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParamError {
    /// `initialize`: `reasoningEffort` present but not a non-empty string.
    #[error("initialize reasoningEffort must be a non-empty string")]
    ReasoningEffort,
    /// `initialize`: `maxTokens` present but not a positive safe integer.
    #[error("initialize maxTokens must be a positive safe integer")]
    MaxTokens,
    /// `initialize`: `cwd` is not a string.
    #[error("initialize requires a cwd string")]
    Cwd,
    /// `initialize`: `provider` present, not `null` and not a string.
    #[error("initialize provider must be a string")]
    Provider,
    /// `initialize`: `model` present, not `null` and not a string.
    #[error("initialize model must be a string")]
    Model,
    /// `session/prompt` or `session/resume` (the method named):
    /// `sessionId` is not a non-empty string.
    #[error("{method} requires a non-empty sessionId string")]
    SessionId {
        /// The method whose params were refused.
        method: &'static str,
    },
    /// `session/wait`: `sessionId` is not a string.
    #[error("session/wait requires a sessionId string")]
    WaitSessionId,
    /// Either working-directory method: `sessionId` is not a non-empty
    /// string.
    #[error("working-directory requests require a non-empty sessionId")]
    WorkingDirectorySessionId,
    /// `session/working-directory/set`: `path` is not a string.
    #[error("working-directory set requires a path string")]
    Path,
    /// `session/prompt`: `contentBlocks` is not an array.
    #[error("session/prompt requires a contentBlocks array")]
    ContentBlocks,
    /// `session/prompt`: the block at this index is not an object with a
    /// string `type`.
    #[error("session/prompt contentBlocks[{0}] must be an object with a string \"type\"")]
    ContentBlock(usize),
}

impl InitializeParams {
    /// Validates in the official order: `reasoningEffort`, `maxTokens`,
    /// `cwd`, `provider`, `model` (the last two defaulted).
    pub fn validate(mut params: JsonObject) -> Result<Self, ParamError> {
        let reasoning_effort = match params.remove("reasoningEffort") {
            None => None,
            Some(Value::String(s)) if !s.is_empty() => Some(s),
            Some(_) => return Err(ParamError::ReasoningEffort),
        };
        let max_tokens = match params.remove("maxTokens") {
            None => None,
            Some(value) => Some(positive_safe_integer(&value).ok_or(ParamError::MaxTokens)?),
        };
        let cwd = string(&mut params, "cwd").ok_or(ParamError::Cwd)?;
        let provider = defaulted_string(&mut params, "provider", DEFAULT_PROVIDER)
            .ok_or(ParamError::Provider)?;
        let model =
            defaulted_string(&mut params, "model", DEFAULT_MODEL).ok_or(ParamError::Model)?;
        Ok(Self {
            cwd,
            provider,
            model,
            reasoning_effort,
            max_tokens,
        })
    }
}

impl PromptParams {
    /// Validates `sessionId` (non-empty), then `contentBlocks` (an array of
    /// objects with a string `type`, the first offending index reported).
    /// The blocks move out of `params` without a copy.
    pub fn validate(mut params: JsonObject) -> Result<Self, ParamError> {
        let session_id =
            non_empty_string(&mut params, "sessionId").ok_or(ParamError::SessionId {
                method: SESSION_PROMPT,
            })?;
        let Some(Value::Array(blocks)) = params.remove("contentBlocks") else {
            return Err(ParamError::ContentBlocks);
        };
        let content_blocks = blocks
            .into_iter()
            .enumerate()
            .map(|(i, block)| match block {
                Value::Object(block) if block.get("type").is_some_and(Value::is_string) => {
                    Ok(block)
                }
                _ => Err(ParamError::ContentBlock(i)),
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            session_id,
            content_blocks,
        })
    }
}

impl SessionParams {
    /// `session/resume`: `sessionId` must be a non-empty string.
    pub fn validate_resume(mut params: JsonObject) -> Result<Self, ParamError> {
        let session_id =
            non_empty_string(&mut params, "sessionId").ok_or(ParamError::SessionId {
                method: SESSION_RESUME,
            })?;
        Ok(Self { session_id })
    }

    /// `session/wait`: `sessionId` must be a string; an empty one is looked
    /// up as is (the official runtime answers `unknown SDK session: `).
    pub fn validate_wait(mut params: JsonObject) -> Result<Self, ParamError> {
        let session_id = string(&mut params, "sessionId").ok_or(ParamError::WaitSessionId)?;
        Ok(Self { session_id })
    }

    /// `session/working-directory/get`: `sessionId` must be a non-empty
    /// string.
    pub fn validate_working_directory(mut params: JsonObject) -> Result<Self, ParamError> {
        let session_id = non_empty_string(&mut params, "sessionId")
            .ok_or(ParamError::WorkingDirectorySessionId)?;
        Ok(Self { session_id })
    }
}

impl SetWorkingDirectoryParams {
    /// Validates `sessionId` (as for `get`), then `path` (any string).
    pub fn validate(mut params: JsonObject) -> Result<Self, ParamError> {
        let session_id = non_empty_string(&mut params, "sessionId")
            .ok_or(ParamError::WorkingDirectorySessionId)?;
        let path = string(&mut params, "path").ok_or(ParamError::Path)?;
        Ok(Self { session_id, path })
    }
}

/// `params[key]` if it is a string (possibly empty).
fn string(params: &mut JsonObject, key: &str) -> Option<String> {
    match params.remove(key) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// `params[key]` if it is a non-empty string.
pub(super) fn non_empty_string(params: &mut JsonObject, key: &str) -> Option<String> {
    string(params, key).filter(|s| !s.is_empty())
}

/// `params[key]` if it is a string, `default` if it is absent or `null`.
fn defaulted_string(params: &mut JsonObject, key: &str, default: &str) -> Option<String> {
    match params.remove(key) {
        None | Some(Value::Null) => Some(default.to_owned()),
        Some(Value::String(s)) => Some(s),
        Some(_) => None,
    }
}

/// `params[key]` taken by `read`: `None` when it is absent or `null`,
/// `err` when `read` refuses it.
pub(super) fn optional<T, E>(
    params: &mut JsonObject,
    key: &str,
    read: impl FnOnce(Value) -> Option<T>,
    err: E,
) -> Result<Option<T>, E> {
    match params.remove(key) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => read(value).map(Some).ok_or(err),
    }
}

/// A string value.
pub(super) fn a_string(value: Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s),
        _ => None,
    }
}

/// A non-negative safe integer (0 … 2^53−1).
pub(super) fn safe_integer(value: Value) -> Option<u64> {
    value.as_u64().filter(|n| *n <= MAX_SAFE_INTEGER)
}

/// An integer from 1 to `max`.
pub(super) fn count_up_to(max: usize) -> impl FnOnce(Value) -> Option<usize> {
    move |value| {
        value
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| (1..=max).contains(n))
    }
}

/// Largest integer a JSON number can carry exactly (`2^53 − 1`).
pub(super) const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// A positive safe integer (1 … 2^53−1), as JavaScript defines it.
fn positive_safe_integer(value: &Value) -> Option<u64> {
    let n = value.as_number()?;
    let int = match (n.as_u64(), n.as_f64()) {
        (Some(u), _) => u,
        (None, Some(f)) if f.fract() == 0.0 && f >= 1.0 && f <= MAX_SAFE_INTEGER as f64 => f as u64,
        _ => return None,
    };
    (1..=MAX_SAFE_INTEGER).contains(&int).then_some(int)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
    use serde_json::json;

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(object) => object,
            other => panic!("not an object: {other}"),
        }
    }

    fn message<T: std::fmt::Debug>(result: Result<T, ParamError>) -> String {
        match result {
            Ok(ok) => panic!("accepted: {ok:?}"),
            Err(err) => err.to_string(),
        }
    }

    /// `params` serialised: as text and as the object a server receives.
    fn wire<T: Serialize>(params: &T) -> (String, JsonObject) {
        let value = serde_json::to_value(params).unwrap();
        (value.to_string(), object(value))
    }

    #[test]
    fn safe_integers_follow_javascript() {
        assert_eq!(positive_safe_integer(&json!(1000)), Some(1000));
        assert_eq!(positive_safe_integer(&json!(64.0)), Some(64));
        assert_eq!(positive_safe_integer(&json!(0)), None);
        assert_eq!(positive_safe_integer(&json!(-3)), None);
        assert_eq!(positive_safe_integer(&json!(1.5)), None);
        assert_eq!(positive_safe_integer(&json!(9007199254740992u64)), None);
        assert_eq!(positive_safe_integer(&json!("12")), None);
    }

    #[test]
    fn initialize_serialises_as_clients_send_it_and_validates_back() {
        let params = InitializeParams {
            cwd: "/home/user/ws".into(),
            provider: "deepseek-official".into(),
            model: "deepseek-flash".into(),
            reasoning_effort: Some("off".into()),
            max_tokens: Some(1000),
        };
        let (text, object) = wire(&params);
        assert_eq!(
            text,
            r#"{"cwd":"/home/user/ws","provider":"deepseek-official","model":"deepseek-flash","reasoningEffort":"off","maxTokens":1000}"#
        );
        assert_eq!(InitializeParams::validate(object), Ok(params));
    }

    #[test]
    fn initialize_defaults_an_absent_or_null_route() {
        let params =
            InitializeParams::validate(object(json!({"cwd": "", "provider": null}))).unwrap();
        assert_eq!(
            wire(&params).0,
            r#"{"cwd":"","provider":"deepseek-official","model":"deepseek-v4-flash"}"#
        );
    }

    #[test]
    fn initialize_checks_in_the_official_order() {
        // Every field bad; fixing them one by one reveals the next check.
        let mut p = object(
            json!({"reasoningEffort": "", "maxTokens": 0, "cwd": 1, "provider": 2, "model": 3}),
        );
        let steps = [
            (
                "reasoningEffort",
                json!(" "),
                "initialize reasoningEffort must be a non-empty string",
            ),
            (
                "maxTokens",
                json!(64.0),
                "initialize maxTokens must be a positive safe integer",
            ),
            ("cwd", json!("ws"), "initialize requires a cwd string"),
            (
                "provider",
                json!("scripted"),
                "initialize provider must be a string",
            ),
            ("model", json!(null), "initialize model must be a string"),
        ];
        for (key, fix, error) in steps {
            assert_eq!(message(InitializeParams::validate(p.clone())), error);
            p.insert(key.into(), fix);
        }
        let params = InitializeParams::validate(p).unwrap();
        assert_eq!(params.reasoning_effort.as_deref(), Some(" "));
        assert_eq!(params.max_tokens, Some(64));
        assert_eq!(params.model, DEFAULT_MODEL);
        for key in ["reasoningEffort", "maxTokens"] {
            let null = object(json!({"cwd": "/", key: null}));
            assert!(InitializeParams::validate(null).is_err(), "{key}: null");
        }
    }

    #[test]
    fn prompt_serialises_as_clients_send_it_and_validates_back() {
        let params = PromptParams {
            session_id: "s1".into(),
            content_blocks: vec![object(json!({"type": "text", "text": "Say hi"}))],
        };
        let (text, object) = wire(&params);
        assert_eq!(
            text,
            r#"{"sessionId":"s1","contentBlocks":[{"type":"text","text":"Say hi"}]}"#
        );
        assert_eq!(PromptParams::validate(object), Ok(params));
    }

    #[test]
    fn prompt_checks_the_session_then_each_block_in_order() {
        let cases = [
            (
                json!({"contentBlocks": 1}),
                "session/prompt requires a non-empty sessionId string",
            ),
            (
                json!({"sessionId": ""}),
                "session/prompt requires a non-empty sessionId string",
            ),
            (
                json!({"sessionId": "s"}),
                "session/prompt requires a contentBlocks array",
            ),
            (
                json!({"sessionId": "s", "contentBlocks": "x"}),
                "session/prompt requires a contentBlocks array",
            ),
            (
                json!({"sessionId": "s", "contentBlocks": [{"type": "text"}, "text", {"type": 1}]}),
                "session/prompt contentBlocks[1] must be an object with a string \"type\"",
            ),
            (
                json!({"sessionId": "s", "contentBlocks": [{"type": "text"}, {"text": "x"}]}),
                "session/prompt contentBlocks[1] must be an object with a string \"type\"",
            ),
        ];
        for (params, error) in cases {
            assert_eq!(message(PromptParams::validate(object(params))), error);
        }
        let weird = object(json!({"sessionId": "s", "contentBlocks": [{"type": "weird", "x": 1}]}));
        assert_eq!(
            PromptParams::validate(weird).map(|p| p.content_blocks),
            Ok(vec![object(json!({"type": "weird", "x": 1}))])
        );
    }

    #[test]
    fn session_params_serialise_as_clients_send_them() {
        let params = SessionParams {
            session_id: "s1".into(),
        };
        let (text, object) = wire(&params);
        assert_eq!(text, r#"{"sessionId":"s1"}"#);
        assert_eq!(
            SessionParams::validate_resume(object.clone()),
            Ok(params.clone())
        );
        assert_eq!(
            SessionParams::validate_wait(object.clone()),
            Ok(params.clone())
        );
        assert_eq!(
            SessionParams::validate_working_directory(object),
            Ok(params)
        );
        let set = SetWorkingDirectoryParams {
            session_id: "s1".into(),
            path: "sub".into(),
        };
        let (text, object) = wire(&set);
        assert_eq!(text, r#"{"sessionId":"s1","path":"sub"}"#);
        assert_eq!(SetWorkingDirectoryParams::validate(object), Ok(set));
    }

    #[test]
    fn session_ids_are_checked_per_method() {
        for bad in [json!({}), json!({"sessionId": 7}), json!({"sessionId": ""})] {
            assert_eq!(
                message(SessionParams::validate_resume(object(bad.clone()))),
                "session/resume requires a non-empty sessionId string"
            );
            assert_eq!(
                message(SessionParams::validate_working_directory(object(
                    bad.clone()
                ))),
                "working-directory requests require a non-empty sessionId"
            );
            assert_eq!(
                message(SetWorkingDirectoryParams::validate(object(bad))),
                "working-directory requests require a non-empty sessionId"
            );
        }
        for bad in [
            json!({}),
            json!({"sessionId": null}),
            json!({"sessionId": ["s"]}),
        ] {
            assert_eq!(
                message(SessionParams::validate_wait(object(bad))),
                "session/wait requires a sessionId string"
            );
        }
        let empty = SessionParams::validate_wait(object(json!({"sessionId": ""})));
        assert_eq!(empty.map(|p| p.session_id), Ok(String::new()));
    }

    #[test]
    fn set_working_directory_checks_the_session_before_the_path() {
        assert_eq!(
            message(SetWorkingDirectoryParams::validate(object(
                json!({"path": 1})
            ))),
            "working-directory requests require a non-empty sessionId"
        );
        assert_eq!(
            message(SetWorkingDirectoryParams::validate(object(
                json!({"sessionId": "s", "path": 1})
            ))),
            "working-directory set requires a path string"
        );
        let empty_path = object(json!({"sessionId": "s", "path": ""}));
        assert_eq!(
            SetWorkingDirectoryParams::validate(empty_path).map(|p| p.path),
            Ok(String::new())
        );
    }
}
