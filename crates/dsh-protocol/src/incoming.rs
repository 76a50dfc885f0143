use crate::{JsonObject, RequestId};
use serde_json::Value;

/// One input line, classified the way the official runtime classifies it.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// `id` is a string or number and `method` is a string.
    Request(Request),
    /// `id` is a string or number but there is no string `method`: a response
    /// to a runtime-originated request. The runtime originates none, so these
    /// are dropped.
    Response(RequestId),
    /// `method` is a string and `id` is absent or not a string/number. No
    /// client notification is handled; they are dropped without an answer.
    Notification(String),
    /// Anything else: never answered.
    Ignored(Ignored),
}

/// Why an input line was ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ignored {
    /// The line is not valid UTF-8 or not valid JSON.
    NotJson,
    /// The line is JSON but not an object (array, string, number, `null`…).
    NotAnObject,
    /// An object with neither a usable `id` nor a string `method`.
    NoIdNoMethod,
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

/// Classifies one line (without its terminator) into a frame.
///
/// Never fails and never panics: malformed input is [`Incoming::Ignored`].
/// The `jsonrpc` member is not checked.
pub fn classify(line: &[u8]) -> Incoming {
    let Ok(value) = serde_json::from_slice::<Value>(line) else {
        return Incoming::Ignored(Ignored::NotJson);
    };
    let Value::Object(mut object) = value else {
        return Incoming::Ignored(Ignored::NotAnObject);
    };
    let id = object.get("id").and_then(RequestId::from_value);
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
        (Some(id), None) => Incoming::Response(id),
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
            Incoming::Response(RequestId::Str("unknown-id".into()))
        );
        // No jsonrpc member: still a request.
        assert_eq!(request(r#"{"id":8,"method":"nope"}"#).method, "nope");
    }

    #[test]
    fn unicode_escapes_including_surrogate_pairs_decode() {
        let r = request(r#"{"id":1,"method":"m","params":{"t":"h\u00e9 \ud83d\ude00"}}"#);
        assert_eq!(r.params.get("t"), Some(&json!("hé 😀")));
    }
}
