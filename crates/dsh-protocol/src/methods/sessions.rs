//! dsh's session-management extensions, opt-in like the others:
//! `session/list` (the stored sessions, newest first, a page at a time)
//! and `session/fork` (a new session holding a stored one's events through
//! a completed turn).

use super::validate::{a_string, count_up_to, non_empty_string, optional, safe_integer};
use crate::JsonObject;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `session/list`: a page of the sessions stored in `DSH_HOME`.
pub const SESSION_LIST: &str = "session/list";

/// `session/fork`: a new session from a stored one's completed turns.
pub const SESSION_FORK: &str = "session/fork";

/// Sessions on a `session/list` page when `limit` is absent.
pub const LIST_PAGE_DEFAULT: usize = 50;

/// Most sessions on one `session/list` page.
pub const LIST_PAGE_MAX: usize = 1000;

/// Params of `session/list`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListParams {
    /// Only sessions created in this working directory (the absolute path
    /// the session was created with, compared exactly).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Where the page starts: the `nextCursor` of the previous page (with
    /// the same `cwd` and `query`). Absent: the newest session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Most sessions returned, 1 to 1000 (default 50).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
    /// Only sessions whose title or id contains this text (without regard
    /// to case).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
}

/// Result of `session/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListResult {
    /// The sessions, most recent activity first (ties by id).
    pub sessions: Vec<SessionInfo>,
    /// Present when more sessions follow: pass it as `cursor`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// One session of a `session/list` page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionInfo {
    /// The session id.
    pub session_id: String,
    /// Its title (the last `session/title`), once it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The working directory it was created in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// Creation time, epoch milliseconds.
    pub created_at: u64,
    /// The time of its last event, epoch milliseconds.
    pub updated_at: u64,
    /// How many turns it started.
    pub turns: u32,
    /// Whether a runtime has it open.
    pub status: SessionActivity,
    /// The parent session of a subagent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_id: Option<String>,
    /// The session and seq a fork was made from (`session/fork`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forked_from: Option<ForkOrigin>,
}

/// `SessionInfo.status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionActivity {
    /// Open in a runtime: this one, or another that holds its lock. It may
    /// be running a turn; it cannot be resumed elsewhere meanwhile.
    Running,
    /// Only stored: it can be resumed.
    Idle,
}

/// Where a fork came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkOrigin {
    /// The source session.
    pub session_id: String,
    /// The seq of the source's `turn/end` the fork's copied events end with.
    pub seq: u64,
}

/// Params of `session/fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkParams {
    /// The session to fork (open in this process or stored in `DSH_HOME`).
    #[schemars(length(min = 1))]
    pub session_id: String,
    /// Fork at the last turn that ended at or before this seq (default: the
    /// last completed turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at_seq: Option<u64>,
    /// The new session's id (default: a new UUID); it must not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub new_session_id: Option<String>,
}

/// Result of `session/fork`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForkResult {
    /// The new session, stored and closed: resume it to prompt it.
    pub session_id: String,
    /// The seq of the source's `turn/end` its copied events end with.
    pub forked_from_seq: u64,
    /// How many turns it holds.
    pub turns: u32,
}

/// A position in a listing, as the opaque `cursor` carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCursor {
    /// The `updatedAt` of the last session of the previous page.
    pub updated_at: u64,
    /// Its id.
    pub session_id: String,
}

/// The prefix of every cursor this runtime writes (its version).
const CURSOR_PREFIX: &str = "c1.";

impl ListCursor {
    /// The cursor as the text a page hands out.
    pub fn encode(&self) -> String {
        let mut text = format!("{CURSOR_PREFIX}{:x}.", self.updated_at);
        for byte in self.session_id.bytes() {
            text.push_str(&format!("{byte:02x}"));
        }
        text
    }

    /// A cursor [`encode`](Self::encode) wrote, or `None`.
    pub fn decode(text: &str) -> Option<Self> {
        let (time, id) = text.strip_prefix(CURSOR_PREFIX)?.split_once('.')?;
        let updated_at = u64::from_str_radix(time, 16).ok()?;
        if id.len() % 2 != 0 || id.is_empty() {
            return None;
        }
        let bytes = (0..id.len())
            .step_by(2)
            .map(|i| {
                id.get(i..i + 2)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
            })
            .collect::<Option<Vec<u8>>>()?;
        let session_id = String::from_utf8(bytes).ok()?;
        let cursor = Self {
            updated_at,
            session_id,
        };
        // One text per cursor: nothing but what `encode` writes is taken.
        (cursor.encode() == text).then_some(cursor)
    }
}

/// Why the params of `session/list` or `session/fork` were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SessionsParamError {
    /// `session/list`: `cwd` is not a string.
    #[error("session/list cwd must be a string")]
    ListCwd,
    /// `session/list`: `cursor` is not one a page returned.
    #[error("session/list cursor must be the nextCursor of an earlier session/list page")]
    ListCursor,
    /// `session/list`: `limit` is not an integer from 1 to 1000.
    #[error("session/list limit must be an integer from 1 to 1000")]
    ListLimit,
    /// `session/list`: `query` is not a string.
    #[error("session/list query must be a string")]
    ListQuery,
    /// `session/fork`: `sessionId` is not a non-empty string.
    #[error("session/fork requires a non-empty sessionId string")]
    ForkSessionId,
    /// `session/fork`: `atSeq` is not a non-negative safe integer.
    #[error("session/fork atSeq must be a non-negative safe integer")]
    ForkAtSeq,
    /// `session/fork`: `newSessionId` is not a non-empty string.
    #[error("session/fork newSessionId must be a non-empty string")]
    ForkNewSessionId,
}

impl ListParams {
    /// `cwd` and `query` (absent, `null` or strings), `cursor` (absent,
    /// `null` or a cursor a page returned), `limit` (absent, `null` or
    /// 1–1000). Returns the params and the decoded cursor.
    pub fn validate(
        mut params: JsonObject,
    ) -> Result<(Self, Option<ListCursor>), SessionsParamError> {
        let cwd = optional(&mut params, "cwd", a_string, SessionsParamError::ListCwd)?;
        let cursor = optional(
            &mut params,
            "cursor",
            a_string,
            SessionsParamError::ListCursor,
        )?;
        let decoded = match &cursor {
            None => None,
            Some(text) => Some(ListCursor::decode(text).ok_or(SessionsParamError::ListCursor)?),
        };
        let limit = optional(
            &mut params,
            "limit",
            count_up_to(LIST_PAGE_MAX),
            SessionsParamError::ListLimit,
        )?;
        let query = optional(
            &mut params,
            "query",
            a_string,
            SessionsParamError::ListQuery,
        )?;
        Ok((
            Self {
                cwd,
                cursor,
                limit,
                query,
            },
            decoded,
        ))
    }
}

impl ForkParams {
    /// `sessionId` (non-empty string), `atSeq` (absent, `null` or a
    /// non-negative safe integer), `newSessionId` (absent, `null` or a
    /// non-empty string).
    pub fn validate(mut params: JsonObject) -> Result<Self, SessionsParamError> {
        let session_id =
            non_empty_string(&mut params, "sessionId").ok_or(SessionsParamError::ForkSessionId)?;
        let at_seq = optional(
            &mut params,
            "atSeq",
            safe_integer,
            SessionsParamError::ForkAtSeq,
        )?;
        let new_session_id = optional(
            &mut params,
            "newSessionId",
            |value| a_string(value).filter(|id| !id.is_empty()),
            SessionsParamError::ForkNewSessionId,
        )?;
        Ok(Self {
            session_id,
            at_seq,
            new_session_id,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn object(value: Value) -> JsonObject {
        match value {
            Value::Object(map) => map,
            _ => JsonObject::new(),
        }
    }

    #[test]
    fn cursors_round_trip_and_nothing_else_decodes() {
        for id in ["s-1", "é/😀", "a.b"] {
            let cursor = ListCursor {
                updated_at: 1_796_008_646_846,
                session_id: id.into(),
            };
            assert_eq!(ListCursor::decode(&cursor.encode()), Some(cursor));
        }
        for bad in [
            "", "c1.", "c1.1", "c1.zz.61", "c1.1.6", "c1.1.ff", "c2.1.61", "c1.01.61", "c1.1.6A",
        ] {
            assert_eq!(ListCursor::decode(bad), None, "{bad}");
        }
    }

    #[test]
    fn list_params_are_checked() {
        let cursor = ListCursor {
            updated_at: 5,
            session_id: "s".into(),
        };
        let (params, decoded) = ListParams::validate(object(json!({
            "cwd": "/w", "cursor": cursor.encode(), "limit": 2, "query": "x"
        })))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(decoded, Some(cursor));
        assert_eq!(
            (params.limit, params.query.as_deref()),
            (Some(2), Some("x"))
        );
        assert_eq!(
            ListParams::validate(object(json!({"cwd": null, "limit": null}))),
            Ok((ListParams::default(), None))
        );
        for (params, error) in [
            (json!({"cwd": 1}), SessionsParamError::ListCwd),
            (json!({"cursor": "nope"}), SessionsParamError::ListCursor),
            (json!({"cursor": 7}), SessionsParamError::ListCursor),
            (json!({"limit": 0}), SessionsParamError::ListLimit),
            (json!({"limit": 1001}), SessionsParamError::ListLimit),
            (json!({"limit": 1.5}), SessionsParamError::ListLimit),
            (json!({"query": ["x"]}), SessionsParamError::ListQuery),
        ] {
            assert_eq!(ListParams::validate(object(params)), Err(error));
        }
    }

    #[test]
    fn fork_params_are_checked() {
        assert_eq!(
            ForkParams::validate(object(
                json!({"sessionId": "s", "atSeq": 4, "newSessionId": "f"})
            )),
            Ok(ForkParams {
                session_id: "s".into(),
                at_seq: Some(4),
                new_session_id: Some("f".into()),
            })
        );
        for (params, error) in [
            (json!({}), SessionsParamError::ForkSessionId),
            (json!({"sessionId": ""}), SessionsParamError::ForkSessionId),
            (
                json!({"sessionId": "s", "atSeq": -1}),
                SessionsParamError::ForkAtSeq,
            ),
            (
                json!({"sessionId": "s", "atSeq": 9007199254740992u64}),
                SessionsParamError::ForkAtSeq,
            ),
            (
                json!({"sessionId": "s", "newSessionId": ""}),
                SessionsParamError::ForkNewSessionId,
            ),
            (
                json!({"sessionId": "s", "newSessionId": 3}),
                SessionsParamError::ForkNewSessionId,
            ),
        ] {
            assert_eq!(ForkParams::validate(object(params)), Err(error));
        }
    }
}
