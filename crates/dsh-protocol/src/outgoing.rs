use crate::RequestId;
use serde::Serialize;
use serde_json::value::RawValue;

/// The only error code the official runtime emits (`-32603`); the message
/// text is the user-visible contract.
pub const INTERNAL_ERROR: i64 = -32603;

/// One complete output frame: compact JSON plus the terminating `\n`.
///
/// serde_json escapes control characters, so a frame never contains a raw
/// CR or LF before its terminator; non-ASCII text is written as raw UTF-8,
/// lone surrogates as `\udXXX` escapes (as the official runtime writes them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing(Vec<u8>);

#[derive(Serialize)]
struct ResponseFrame<'a, T> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a T,
}

#[derive(Serialize)]
struct ErrorFrame<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    error: ErrorObject<'a>,
}

#[derive(Serialize)]
struct ErrorObject<'a> {
    code: i64,
    message: &'a str,
}

#[derive(Serialize)]
struct NotificationFrame<'a, T> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a T,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventParams<'a> {
    session_id: &'a str,
    event: &'a RawValue,
}

impl Outgoing {
    /// Every frame passes here: lone-surrogate markers become `\udXXX`
    /// escapes again ([`surrogates`](crate::surrogates)).
    fn finish(bytes: Vec<u8>) -> Self {
        let mut bytes = crate::surrogates::decode(bytes);
        bytes.push(b'\n');
        Self(bytes)
    }

    /// `{"jsonrpc":"2.0","id":…,"result":…}`.
    pub fn response<T: Serialize>(id: &RequestId, result: &T) -> Result<Self, serde_json::Error> {
        let frame = ResponseFrame {
            jsonrpc: "2.0",
            id,
            result,
        };
        serde_json::to_vec(&frame).map(Self::finish)
    }

    /// `{"jsonrpc":"2.0","id":…,"error":{"code":-32603,"message":…}}`.
    pub fn error(id: &RequestId, message: &str) -> Self {
        let frame = ErrorFrame {
            jsonrpc: "2.0",
            id,
            error: ErrorObject {
                code: INTERNAL_ERROR,
                message,
            },
        };
        // A struct of strings and an id always serialises.
        Self::finish(serde_json::to_vec(&frame).unwrap_or_default())
    }

    /// `{"jsonrpc":"2.0","method":…,"params":…}`.
    pub fn notification<T: Serialize>(method: &str, params: &T) -> Result<Self, serde_json::Error> {
        let frame = NotificationFrame {
            jsonrpc: "2.0",
            method,
            params,
        };
        serde_json::to_vec(&frame).map(Self::finish)
    }

    /// A `session.event` notification around an already serialised event, so
    /// that the event's bytes are the ones persisted, not a re-serialisation.
    pub fn session_event(session_id: &str, event: &RawValue) -> Self {
        let frame = NotificationFrame {
            jsonrpc: "2.0",
            method: crate::notifications::SESSION_EVENT,
            params: &EventParams { session_id, event },
        };
        // Sized up front: a large event is copied once, without the slack
        // of a growing buffer.
        let mut bytes = Vec::with_capacity(event.get().len() + 2 * session_id.len() + 96);
        // Strings and a raw value always serialise.
        match serde_json::to_writer(&mut bytes, &frame) {
            Ok(()) => Self::finish(bytes),
            Err(_) => Self(Vec::new()),
        }
    }

    /// The frame's bytes, including the trailing `\n`.
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(frame: &Outgoing) -> &str {
        std::str::from_utf8(frame.as_bytes()).unwrap_or("<invalid utf-8>")
    }

    #[test]
    fn frames_have_the_official_key_order_and_one_newline() {
        let id = RequestId::Num(7.into());
        let ok = Outgoing::response(&id, &json!({"b":1,"a":2})).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            text(&ok),
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"b\":1,\"a\":2}}\n"
        );
        let err = Outgoing::error(&RequestId::Str("x".into()), "boom \"q\"\nline");
        assert_eq!(
            text(&err),
            "{\"jsonrpc\":\"2.0\",\"id\":\"x\",\"error\":{\"code\":-32603,\"message\":\"boom \\\"q\\\"\\nline\"}}\n"
        );
    }

    #[test]
    fn session_event_embeds_the_raw_event_bytes() {
        let raw = RawValue::from_string(
            r#"{"type":"turn/start","seq":4,"time":1,"data":{"turn":1}}"#.into(),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let frame = Outgoing::session_event("s é", &raw);
        assert_eq!(
            text(&frame),
            "{\"jsonrpc\":\"2.0\",\"method\":\"session.event\",\"params\":{\"sessionId\":\"s é\",\"event\":{\"type\":\"turn/start\",\"seq\":4,\"time\":1,\"data\":{\"turn\":1}}}}\n"
        );
    }
}
