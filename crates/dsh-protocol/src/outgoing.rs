use crate::JsonRope;
use crate::RequestId;
use crate::methods::{DeltaKind, SESSION_DELTA, SessionDeltaParams};
use serde::Serialize;
use std::io::Write;

/// The only error code the official runtime emits (`-32603`); the message
/// text is the user-visible contract.
pub const INTERNAL_ERROR: i64 = -32603;

/// One complete output frame: compact JSON plus the terminating `\n`.
///
/// serde_json escapes control characters, so a frame never contains a raw
/// CR or LF before its terminator; non-ASCII text is written as raw UTF-8,
/// lone surrogates as `\udXXX` escapes (as the official runtime writes them).
///
/// A `session.event` frame shares its event's bytes with the session log
/// instead of copying them ([`Outgoing::session_event`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// The whole frame, or its part before a shared event.
    head: Vec<u8>,
    /// A shared event and the bytes that close the frame after it.
    shared: Option<(JsonRope, &'static [u8])>,
}

/// Appends to `out` the whole `session.delta` frame (its `\n` included)
/// of `params` whose text is `pieces` joined (`params.delta` is ignored):
/// the pieces are escaped eight bytes at a time straight into `out`, never
/// joined first, so a writer reusing `out` moves a long delta's text once.
pub(crate) fn write_session_delta(
    out: &mut Vec<u8>,
    params: &SessionDeltaParams,
    pieces: &[String],
) {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Head<'a> {
        session_id: &'a str,
        turn: u32,
        step: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        attempt: Option<u32>,
        kind: DeltaKind,
        index: u32,
        #[serde(skip_serializing_if = "Option::is_none")]
        call_id: Option<&'a str>,
    }
    let head = Head {
        session_id: &params.session_id,
        turn: params.turn,
        step: params.step,
        attempt: params.attempt,
        kind: params.kind,
        index: params.index,
        call_id: params.call_id.as_deref(),
    };
    let start = out.len();
    out.reserve(pieces.iter().map(String::len).sum::<usize>() + params.session_id.len() + 160);
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"");
    out.extend_from_slice(SESSION_DELTA.as_bytes());
    out.extend_from_slice(b"\",\"params\":");
    // Plain fields always serialise; the object's `}` is reopened.
    let _ = serde_json::to_writer(&mut *out, &head);
    out.pop();
    out.extend_from_slice(b",\"delta\":\"");
    for piece in pieces {
        crate::escape::escape_into(out, piece);
    }
    out.extend_from_slice(b"\"}}");
    // Lone surrogates (rare) become escapes as in every frame.
    if memchr::memchr(0xF4, &out[start..]).is_some() {
        let frame = out.split_off(start);
        crate::surrogates::decode_into(out, &frame);
    }
    out.push(b'\n');
}

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
struct RequestFrame<'a, T> {
    jsonrpc: &'static str,
    id: &'a str,
    method: &'a str,
    params: &'a T,
}

#[derive(Serialize)]
struct NotificationFrame<'a, T> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a T,
}

impl Outgoing {
    /// Every frame passes here: lone-surrogate markers become `\udXXX`
    /// escapes again ([`surrogates`](crate::surrogates)).
    fn finish(bytes: Vec<u8>) -> Self {
        let mut bytes = crate::surrogates::decode(bytes);
        bytes.push(b'\n');
        Self {
            head: bytes,
            shared: None,
        }
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

    /// A `session.delta` notification (the bytes
    /// [`notification`](Self::notification) writes, built as the frame
    /// writer builds them: the text escaped eight bytes at a time).
    pub fn session_delta(params: &SessionDeltaParams) -> Self {
        let mut head = Vec::new();
        write_session_delta(&mut head, params, std::slice::from_ref(&params.delta));
        Self { head, shared: None }
    }

    /// `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`: a request of the
    /// runtime to its client (`approval/request`).
    pub fn request<T: Serialize>(
        id: &str,
        method: &str,
        params: &T,
    ) -> Result<Self, serde_json::Error> {
        let frame = RequestFrame {
            jsonrpc: "2.0",
            id,
            method,
            params,
        };
        serde_json::to_vec(&frame).map(Self::finish)
    }

    /// A `session.event` notification around an already serialised event
    /// (compact JSON whose lone surrogates are escapes again), sharing its
    /// bytes: the event is neither re-serialised nor copied, so the bytes
    /// sent are the ones persisted.
    pub fn session_event(session_id: &str, event: JsonRope) -> Self {
        let mut head = Vec::with_capacity(session_id.len() + 80);
        head.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"method\":\"");
        head.extend_from_slice(crate::notifications::SESSION_EVENT.as_bytes());
        head.extend_from_slice(b"\",\"params\":{\"sessionId\":");
        // A string always serialises.
        let _ = serde_json::to_writer(&mut head, session_id);
        head.extend_from_slice(b",\"event\":");
        Self {
            head: crate::surrogates::decode(head),
            shared: Some((event, b"}}\n")),
        }
    }

    /// Writes the frame's bytes (including the trailing `\n`) to `out`: one
    /// `write` or, for a frame sharing an event, one vectored write of its
    /// parts (a pipe gets the frame whole, as from a single buffer).
    pub fn write_to(&self, out: &mut impl Write) -> std::io::Result<()> {
        let Some((event, tail)) = &self.shared else {
            return out.write_all(&self.head);
        };
        crate::rope::write_all_vectored(out, &self.head, event.segments(), tail)
    }

    /// The frame's bytes, including the trailing `\n` (a copy for a frame
    /// that shares an event).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut bytes = Vec::with_capacity(
            self.head.len() + self.shared.as_ref().map_or(0, |(e, t)| e.len() + t.len()),
        );
        // Writing to a Vec cannot fail.
        let _ = self.write_to(&mut bytes);
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(frame: &Outgoing) -> String {
        String::from_utf8(frame.to_vec()).unwrap_or_else(|_| "<invalid utf-8>".into())
    }

    #[test]
    fn frames_have_the_official_key_order_and_one_newline() {
        let id = RequestId::Num(7.into());
        let ok = Outgoing::response(&id, &json!({"b":1,"a":2})).unwrap();
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
        let raw = JsonRope::from_vec(
            br#"{"type":"turn/start","seq":4,"time":1,"data":{"turn":1}}"#.to_vec(),
        );
        let frame = Outgoing::session_event("s é\u{10FFFF}\u{10F000}", raw.clone());
        let expected = "{\"jsonrpc\":\"2.0\",\"method\":\"session.event\",\"params\":{\"sessionId\":\"s é\\ud800\",\"event\":{\"type\":\"turn/start\",\"seq\":4,\"time\":1,\"data\":{\"turn\":1}}}}\n";
        assert_eq!(text(&frame), expected);
        // The event's bytes are shared, not copied.
        assert!(matches!(&frame.shared, Some((event, _))
            if event.segments()[0].as_ptr() == raw.segments()[0].as_ptr()));
        // The same bytes as the notification built from values.
        let value: serde_json::Value = serde_json::from_slice(&raw.to_vec()).unwrap_or_default();
        let params = json!({"sessionId": "s é\u{10FFFF}\u{10F000}", "event": value});
        let built = Outgoing::notification("session.event", &params).unwrap();
        assert_eq!(text(&built), expected);
    }

    #[test]
    fn a_delta_frame_is_the_frame_serde_writes() {
        for (attempt, call_id, delta) in [
            (None, None, "plain"),
            (
                Some(2),
                Some("call-1"),
                "with \"quotes\", a \\ and\nlines\u{1}",
            ),
            (None, Some("c"), ""),
        ] {
            let params = SessionDeltaParams {
                session_id: "s-\"1".into(),
                turn: 3,
                step: 4,
                attempt,
                kind: DeltaKind::ToolArguments,
                index: 5,
                call_id: call_id.map(str::to_owned),
                delta: delta.into(),
            };
            let serde = Outgoing::notification(SESSION_DELTA, &params).map(|f| f.to_vec());
            assert_eq!(
                Ok(Outgoing::session_delta(&params).to_vec()),
                serde.map_err(|e| e.to_string())
            );
        }
    }
}
