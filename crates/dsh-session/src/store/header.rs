//! The session header: line 1 of every session log (§11.3).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The session log format generation this store reads and writes.
pub const FORMAT_VERSION: u64 = 4;

/// The literal header type `session`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum HeaderType {
    /// `session`
    #[default]
    #[serde(rename = "session")]
    Session,
}

/// Line 1 of a session log, keys in the official order:
/// `type, version, id, createdAt, cwd?, parentSession?, isSeeded, origin?,
/// delegationDepth, agentPreset?`. Unknown keys are refused.
///
/// ```
/// use dsh_session::store::SessionHeader;
/// let line = r#"{"type":"session","version":4,"id":"s","createdAt":1,"cwd":"/w","isSeeded":false,"delegationDepth":0}"#;
/// let header: SessionHeader = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}"));
/// assert_eq!(serde_json::to_string(&header).ok().as_deref(), Some(line));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionHeader {
    /// Always `session`.
    #[serde(rename = "type")]
    pub kind: HeaderType,
    /// Format generation; this store reads and writes only
    /// [`FORMAT_VERSION`].
    pub version: u64,
    /// The session id.
    pub id: String,
    /// Creation time, epoch milliseconds.
    pub created_at: u64,
    /// Working directory at creation (names the project directory).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// The parent session of a subagent child.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session: Option<String>,
    /// Whether the log starts with events inherited from a fork seed.
    pub is_seeded: bool,
    /// How the session came to be (`subagent` for children).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub origin: Option<String>,
    /// 0 for root sessions, parent's + 1 for children.
    pub delegation_depth: u64,
    /// Agent preset selected at creation (shape not observed; kept verbatim).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_preset: Option<Value>,
}

impl SessionHeader {
    /// The header of a new root session.
    pub fn root(id: impl Into<String>, created_at: u64, cwd: Option<String>) -> Self {
        Self {
            kind: HeaderType::Session,
            version: FORMAT_VERSION,
            id: id.into(),
            created_at,
            cwd,
            parent_session: None,
            is_seeded: false,
            origin: None,
            delegation_depth: 0,
            agent_preset: None,
        }
    }

    /// The header of a subagent child of `parent` at `delegation_depth`
    /// (`origin: "subagent"`).
    pub fn subagent_child(
        id: impl Into<String>,
        created_at: u64,
        cwd: Option<String>,
        parent: impl Into<String>,
        delegation_depth: u64,
    ) -> Self {
        Self {
            parent_session: Some(parent.into()),
            origin: Some("subagent".to_owned()),
            delegation_depth,
            ..Self::root(id, created_at, cwd)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(line: &str) {
        let header: SessionHeader =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        let again = serde_json::to_string(&header).unwrap();
        assert_eq!(again, line);
    }

    #[test]
    fn official_headers_round_trip() {
        round_trip(
            r#"{"type":"session","version":4,"id":"session-resume","createdAt":1796008646846,"cwd":"/home/user/ws","isSeeded":false,"delegationDepth":0}"#,
        );
        round_trip(
            r#"{"type":"session","version":4,"id":"77f213c4-6d86-481e-8f30-13237ea2021b","createdAt":1796008674564,"cwd":"/home/user/ws","parentSession":"session-subagent-parent","isSeeded":false,"origin":"subagent","delegationDepth":1}"#,
        );
        round_trip(
            r#"{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":true,"delegationDepth":0,"agentPreset":"plan"}"#,
        );
    }

    #[test]
    fn constructors_match_the_official_shapes() {
        let root = SessionHeader::root(
            "session-resume",
            1796008646846,
            Some("/home/user/ws".into()),
        );
        assert_eq!(
            serde_json::to_string(&root).unwrap_or_default(),
            r#"{"type":"session","version":4,"id":"session-resume","createdAt":1796008646846,"cwd":"/home/user/ws","isSeeded":false,"delegationDepth":0}"#
        );
        let child = SessionHeader::subagent_child("c", 2, Some("/w".into()), "p", 1);
        assert_eq!(
            serde_json::to_string(&child).unwrap_or_default(),
            r#"{"type":"session","version":4,"id":"c","createdAt":2,"cwd":"/w","parentSession":"p","isSeeded":false,"origin":"subagent","delegationDepth":1}"#
        );
    }

    #[test]
    fn unknown_keys_and_other_types_are_refused() {
        let extra = r#"{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0,"title":"t"}"#;
        assert!(serde_json::from_str::<SessionHeader>(extra).is_err());
        let wrong = r#"{"type":"turn/start","version":4,"id":"x","createdAt":1,"isSeeded":false,"delegationDepth":0}"#;
        assert!(serde_json::from_str::<SessionHeader>(wrong).is_err());
        let missing = r#"{"type":"session","version":4,"id":"x","createdAt":1,"isSeeded":false}"#;
        assert!(serde_json::from_str::<SessionHeader>(missing).is_err());
    }
}
