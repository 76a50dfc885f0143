use crate::{JsonObject, Outgoing, RequestId, id_scan, lenient, surrogates};
use serde_json::Value;

/// One input line, classified the way the official runtime classifies it.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// `id` is a string or number and `method` is a string.
    Request(Request),
    /// The line cannot be read as JSON but a top-level `id` can be
    /// recovered: answered with an error (the official runtime leaves it
    /// unanswered, and a client waiting on that id would wait forever).
    Invalid(InvalidLine),
    /// `id` is a string or number but there is no string `method`: a response
    /// to a runtime-originated request (`approval/request`); any other is
    /// dropped.
    Response(ClientResponse),
    /// `method` is a string and `id` is absent or not a string/number. No
    /// client notification is handled; they are dropped without an answer.
    Notification(String),
    /// Anything else: never answered.
    Ignored(Ignored),
}

/// Why an input line was ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// The line is not valid JSON and no id can be recovered from it.
    NotJson,
    /// The line is JSON but not an object (array, string, number, `null`…).
    NotAnObject,
    /// An object with neither a usable `id` nor a string `method`.
    NoIdNoMethod,
}

/// A client's response to a request the runtime sent.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientResponse {
    /// The id of the runtime's request.
    pub id: RequestId,
    /// `result`, when present.
    pub result: Option<Value>,
    /// `error`, when present.
    pub error: Option<Value>,
}

/// A request the runtime must answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The id to echo back.
    pub id: RequestId,
    /// The method name, as sent.
    pub method: String,
    /// The params object; absent, `null`, array or scalar params become `{}`.
    pub params: JsonObject,
}

/// A line that is not JSON but whose id is readable.
#[derive(Debug, Clone, PartialEq)]
pub struct InvalidLine {
    /// The recovered id.
    pub id: RequestId,
    /// What the parser refused (serde_json's message).
    pub problem: String,
}

impl InvalidLine {
    /// The answer: `-32603` with `invalid request: <problem>`.
    pub fn answer(&self) -> Outgoing {
        Outgoing::error(&self.id, &format!("invalid request: {}", self.problem))
    }
}

/// Classifies one line (without its terminator) into a frame.
///
/// Never fails and never panics. The line is read as the official runtime
/// reads it: invalid UTF-8 is replaced by U+FFFD (as Node decodes stdin),
/// lone surrogate escapes are kept (see [`surrogates`]), numbers beyond the
/// `f64` range read as `null` and nesting is accepted up to
/// [`lenient::MAX_DEPTH`]. A line that still is not JSON is
/// [`Incoming::Invalid`] when its id is readable, else ignored. The
/// `jsonrpc` member is not checked.
pub fn classify(line: &[u8]) -> Incoming {
    let text = String::from_utf8_lossy(line);
    let text = surrogates::encode(&text);
    let value = match lenient::from_encoded::<Value>(&text) {
        Ok(value) => value,
        Err(err) => {
            return match id_scan::recover(&text) {
                Some(id) => Incoming::Invalid(InvalidLine {
                    id,
                    problem: err.to_string(),
                }),
                None => Incoming::Ignored(Ignored::NotJson),
            };
        }
    };
    let Value::Object(mut object) = value else {
        return Incoming::Ignored(Ignored::NotAnObject);
    };
    let id = match object.get("id") {
        // `1e400` was read as null: JavaScript holds Infinity, an id.
        Some(Value::Null) => id_scan::recover(&text).filter(|id| *id == RequestId::NonFinite),
        Some(value) => RequestId::from_value(value),
        None => None,
    };
    let method = match object.remove("method") {
        Some(Value::String(m)) => Some(m),
        _ => None,
    };
    match (id, method) {
        (Some(id), Some(method)) => {
            let params = match object.remove("params") {
                Some(Value::Object(params)) => params,
                _ => JsonObject::new(),
            };
            Incoming::Request(Request { id, method, params })
        }
        (Some(id), None) => Incoming::Response(ClientResponse {
            id,
            result: object.remove("result"),
            error: object.remove("error"),
        }),
        (None, Some(method)) => Incoming::Notification(method),
        (None, None) => Incoming::Ignored(Ignored::NoIdNoMethod),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(line: &str) -> Request {
        match classify(line.as_bytes()) {
            Incoming::Request(r) => r,
            other => panic!("expected a request, got {other:?}"),
        }
    }

    #[test]
    fn ids_keep_their_json_type() {
        assert_eq!(
            request(r#"{"id":7,"method":"m"}"#).id,
            RequestId::Num(7.into())
        );
        assert_eq!(
            request(r#"{"id":"7","method":"m"}"#).id,
            RequestId::Str("7".into())
        );
    }

    #[test]
    fn params_that_are_not_objects_become_empty() {
        for params in [
            "",
            r#","params":null"#,
            r#","params":[1,2]"#,
            r#","params":3"#,
            r#","params":"x""#,
        ] {
            let r = request(&format!(r#"{{"id":1,"method":"m"{params}}}"#));
            assert!(r.params.is_empty(), "params {params:?}");
        }
        let r = request(r#"{"id":1,"method":"m","params":{"b":1,"a":2}}"#);
        assert_eq!(
            serde_json::to_string(&r.params).unwrap_or_default(),
            r#"{"b":1,"a":2}"#
        );
    }

    #[test]
    fn classification_follows_the_official_rules() {
        assert_eq!(
            classify(b"this is not json"),
            Incoming::Ignored(Ignored::NotJson)
        );
        assert_eq!(
            classify(b"[1,2,3]"),
            Incoming::Ignored(Ignored::NotAnObject)
        );
        assert_eq!(classify(b"null"), Incoming::Ignored(Ignored::NotAnObject));
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","foo":1}"#),
            Incoming::Ignored(Ignored::NoIdNoMethod)
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":null,"method":"nope"}"#),
            Incoming::Notification("nope".into())
        );
        assert_eq!(
            classify(br#"{"id":true,"method":"nope"}"#),
            Incoming::Notification("nope".into())
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","id":"unknown-id","result":{}}"#),
            Incoming::Response(ClientResponse {
                id: RequestId::Str("unknown-id".into()),
                result: Some(json!({})),
                error: None,
            })
        );
        // No jsonrpc member: still a request.
        assert_eq!(request(r#"{"id":8,"method":"nope"}"#).method, "nope");
    }

    #[test]
    fn lone_surrogates_invalid_utf8_huge_numbers_and_deep_nesting_are_requests() {
        let r = request(r#"{"id":"s\udc00","method":"m\ud800","params":{"a":1e400}}"#);
        assert_eq!(r.id, RequestId::Str("s\u{10FFFF}\u{10F400}".into()));
        assert_eq!(r.method, "m\u{10FFFF}\u{10F000}");
        assert_eq!(r.params.get("a"), Some(&Value::Null));
        let deep = format!(
            r#"{{"id":2,"method":"m","params":{{"x":{}{}}}}}"#,
            "[".repeat(500),
            "]".repeat(500)
        );
        assert_eq!(request(&deep).id, RequestId::Num(2.into()));
        assert_eq!(
            request(r#"{"id":-1e400,"method":"m"}"#).id,
            RequestId::NonFinite
        );
        assert_eq!(
            classify(br#"{"id":null,"method":"m"}"#),
            Incoming::Notification("m".into())
        );
    }

    #[test]
    fn invalid_utf8_is_replaced_as_node_decodes_it() {
        let Incoming::Request(r) = classify(b"{\"id\":\"u\xc3\",\"method\":\"m\xff\xfe\"}") else {
            panic!("not a request");
        };
        assert_eq!(r.id, RequestId::Str("u\u{FFFD}".into()));
        assert_eq!(r.method, "m\u{FFFD}\u{FFFD}");
    }

    #[test]
    fn unreadable_lines_with_an_id_are_answered_with_the_problem() {
        let Incoming::Invalid(invalid) = classify(br#"{"id":"t","method":"m""#) else {
            panic!("not invalid");
        };
        assert_eq!(invalid.id, RequestId::Str("t".into()));
        assert_eq!(
            String::from_utf8(invalid.answer().to_vec()).ok().as_deref(),
            Some(
                "{\"jsonrpc\":\"2.0\",\"id\":\"t\",\"error\":{\"code\":-32603,\"message\":\"invalid request: EOF while parsing an object at line 1 column 22\"}}\n"
            )
        );
        assert_eq!(classify(b"{"), Incoming::Ignored(Ignored::NotJson));
        assert_eq!(
            classify(b"\xff\xfe not utf-8"),
            Incoming::Ignored(Ignored::NotJson)
        );
    }

    #[test]
    fn unicode_escapes_including_surrogate_pairs_decode() {
        let r = request(r#"{"id":1,"method":"m","params":{"t":"h\u00e9 \ud83d\ude00"}}"#);
        assert_eq!(r.params.get("t"), Some(&json!("hé 😀")));
    }
}
