//! The JSON Schema of the whole protocol, generated from the wire types:
//! every method's params and result, the request the runtime sends its
//! client (`approval/request`), the notifications and every event
//! type's payload, in one document ([`protocol_schema`](crate::schema::protocol_schema); `dsh
//! --print-schema` prints it).
//!
//! What a client sends (method params, the answer to `approval/request`)
//! is described as the runtime reads it (serde's deserialize side: a field
//! with a default may be left out); what the runtime sends (results,
//! `approval/request` params, notifications, events) as it writes it (a
//! field skipped when empty may be absent, every other field is present).
//! The definitions both sides refer to are under `$defs`.

use crate::JsonObject;
use crate::catalog::Event;
use crate::methods::{
    APPROVAL_REQUEST, ApprovalRequestParams, ApprovalResponse, Budget, CancelParams, CancelResult,
    EmptyResult, EventsParams, EventsResult, INITIALIZE, InitializeExtensions, InitializeParams,
    InitializeResult, PromptParams, PromptResult, SESSION_CANCEL, SESSION_EVENTS, SESSION_PROMPT,
    SESSION_RESUME, SESSION_USAGE, SESSION_USAGE_NOTIFICATION, SESSION_WAIT, SHUTDOWN,
    SessionParams, SessionUsageParams, SetWorkingDirectoryParams, UsageParams, UsageResult,
    WORKING_DIRECTORY_GET, WORKING_DIRECTORY_SET, WorkingDirectoryResult,
};
use crate::methods::{ForkParams, ForkResult, ListParams, ListResult, SESSION_FORK, SESSION_LIST};
use crate::methods::{MCP_SERVER, McpServerParams, SESSION_DELTA, SessionDeltaParams};
use crate::notifications::{
    SESSION_EVENT, SESSION_STATUS, SUBAGENT_FINISHED, SUBAGENT_STARTED, SessionEventParams,
    SessionStatusParams, SubagentFinishedParams, SubagentStartedParams,
};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

/// The document's `title`.
pub const SCHEMA_TITLE: &str = "dsh protocol";

/// Where the schemas of both sides keep their definitions (a JSON pointer).
const DEFINITIONS: &str = "/$defs";

/// The JSON Schema (draft 2020-12) of the protocol, as one document:
///
/// ```json
/// {"$schema": …, "title": "dsh protocol", "description": …,
///  "methods": {"<method>": {"params": <schema>, "result": <schema>}},
///  "runtimeRequests": {"approval/request": {"params": …, "result": …}},
///  "notifications": {"<notification>": <schema of its params>},
///  "events": {"<event type>": <schema of its data>},
///  "$defs": {…}}
/// ```
///
/// Methods, notifications and events come in protocol order, the
/// definitions sorted by name; the document is the same on every call.
///
/// ```
/// let schema = dsh_protocol::schema::protocol_schema();
/// assert_eq!(schema["title"], "dsh protocol");
/// assert!(schema["events"]["turn/end"].is_object());
/// ```
pub fn protocol_schema() -> Value {
    // What a client sends, as the runtime reads it…
    let mut reads = settings().for_deserialize().into_generator();
    // …and what the runtime sends, as it writes it.
    let mut writes = settings()
        .for_serialize()
        .with_transform(present_is_not_null as fn(&mut Schema))
        .into_generator();

    let initialize_params = json!({
        "description": "The official params and dsh's extension fields, in one object.",
        "allOf": [
            reads.subschema_for::<InitializeParams>(),
            reads.subschema_for::<InitializeExtensions>(),
        ]
    });
    let prompt_params = json!({
        "description": "The official params and dsh's budget fields, in one object.",
        "allOf": [
            reads.subschema_for::<PromptParams>(),
            reads.subschema_for::<Budget>(),
        ]
    });
    let shutdown_params = json!({
        "description": "Ignored.",
        "type": "object"
    });
    let mut methods = vec![
        (
            INITIALIZE,
            initialize_params,
            writes.subschema_for::<InitializeResult>().to_value(),
        ),
        (
            SESSION_PROMPT,
            prompt_params,
            writes.subschema_for::<PromptResult>().to_value(),
        ),
        method::<SessionParams, EmptyResult>(SESSION_RESUME, &mut reads, &mut writes),
        method::<SessionParams, EmptyResult>(SESSION_WAIT, &mut reads, &mut writes),
        method::<SessionParams, WorkingDirectoryResult>(
            WORKING_DIRECTORY_GET,
            &mut reads,
            &mut writes,
        ),
        method::<SetWorkingDirectoryParams, WorkingDirectoryResult>(
            WORKING_DIRECTORY_SET,
            &mut reads,
            &mut writes,
        ),
        (
            SHUTDOWN,
            shutdown_params,
            writes.subschema_for::<EmptyResult>().to_value(),
        ),
        method::<CancelParams, CancelResult>(SESSION_CANCEL, &mut reads, &mut writes),
        method::<EventsParams, EventsResult>(SESSION_EVENTS, &mut reads, &mut writes),
        method::<ListParams, ListResult>(SESSION_LIST, &mut reads, &mut writes),
        method::<ForkParams, ForkResult>(SESSION_FORK, &mut reads, &mut writes),
        method::<UsageParams, UsageResult>(SESSION_USAGE, &mut reads, &mut writes),
    ];
    // The runtime's request: it writes the params and reads the answer.
    let mut runtime_requests = vec![(
        APPROVAL_REQUEST,
        writes.subschema_for::<ApprovalRequestParams>().to_value(),
        reads.subschema_for::<ApprovalResponse>().to_value(),
    )];
    let notifications = vec![
        (SESSION_EVENT, writes.subschema_for::<SessionEventParams>()),
        (
            SESSION_STATUS,
            writes.subschema_for::<SessionStatusParams>(),
        ),
        (
            SUBAGENT_STARTED,
            writes.subschema_for::<SubagentStartedParams>(),
        ),
        (
            SUBAGENT_FINISHED,
            writes.subschema_for::<SubagentFinishedParams>(),
        ),
        (
            SESSION_USAGE_NOTIFICATION,
            writes.subschema_for::<SessionUsageParams>(),
        ),
        (SESSION_DELTA, writes.subschema_for::<SessionDeltaParams>()),
        (MCP_SERVER, writes.subschema_for::<McpServerParams>()),
    ];
    let events = Event::payload_schemas(&mut writes);

    // One `$defs` for both sides: a type whose two schemas differ keeps
    // the written one under its name and the read one under a new name.
    let mut definitions = writes.take_definitions(true);
    let mut read_definitions = reads.take_definitions(true);
    let renames = renames(&read_definitions, &definitions);
    if !renames.is_empty() {
        for (_, params, _) in &mut methods {
            rename_refs(params, &renames);
        }
        for (_, _, result) in &mut runtime_requests {
            rename_refs(result, &renames);
        }
        for schema in read_definitions.values_mut() {
            rename_refs(schema, &renames);
        }
    }
    for (name, schema) in read_definitions {
        let name = renames.get(&name).cloned().unwrap_or(name);
        definitions.entry(name).or_insert(schema);
    }
    let mut sorted: Vec<(String, Value)> = definitions.into_iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(&b.0));

    json!({
        "$schema": SchemaSettings::draft2020_12().meta_schema,
        "title": SCHEMA_TITLE,
        "description": concat!(
            "The DeepSeek Harness SDK protocol as dsh speaks it: newline-delimited JSON-RPC 2.0 ",
            "on stdio. `methods` are the client's requests (params as the runtime reads them, ",
            "results as it writes them); `runtimeRequests` the requests the runtime sends its ",
            "client; `notifications` the params of each runtime notification; `events` the ",
            "`data` of each session event type, as carried by `session.event`'s `event`. ",
            "Readers should accept event types, fields and codes this document does not list.",
        ),
        "methods": pairs(methods),
        "runtimeRequests": pairs(runtime_requests),
        "notifications": notifications
            .into_iter()
            .map(|(name, schema)| (name.to_owned(), schema.to_value()))
            .collect::<Map<_, _>>(),
        "events": events
            .into_iter()
            .map(|(kind, schema)| (kind.to_owned(), schema.to_value()))
            .collect::<Map<_, _>>(),
        "$defs": sorted.into_iter().collect::<JsonObject>(),
    })
}

/// Draft 2020-12, definitions under [`DEFINITIONS`].
fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with(|settings| settings.definitions_path = DEFINITIONS.into())
}

/// Transform of the written side. A property serde may leave out is one
/// skipped when it is `None` (every `skip_serializing_if` of this crate is
/// `Option::is_none`, which a test holds), so when present it is never
/// `null`: its schema loses the `null` the `Option` brought.
fn present_is_not_null(schema: &mut Schema) {
    if let Some(object) = schema.as_object_mut() {
        let required: Vec<Value> = match object.get("required") {
            Some(Value::Array(required)) => required.clone(),
            _ => Vec::new(),
        };
        if let Some(Value::Object(properties)) = object.get_mut("properties") {
            for (name, property) in properties.iter_mut() {
                if !required.iter().any(|r| r == name.as_str()) {
                    drop_null(property);
                }
            }
        }
    }
    schemars::transform::transform_subschemas(&mut present_is_not_null, schema);
}

/// `property` without its `null`: out of a `type` list, or the other
/// alternative of an `anyOf` with `{"type": "null"}`, put in its place.
fn drop_null(property: &mut Value) {
    let Value::Object(map) = property else {
        return;
    };
    if let Some(Value::Array(types)) = map.get_mut("type") {
        types.retain(|t| t != "null");
        if let [only] = types.as_slice() {
            let only = only.clone();
            map.insert("type".to_owned(), only);
        }
    }
    let null = json!({"type": "null"});
    let other = match map.get("anyOf") {
        Some(Value::Array(alternatives)) if alternatives.len() == 2 => {
            match alternatives.iter().position(|a| *a == null) {
                Some(i) => alternatives.get(1 - i).cloned(),
                None => None,
            }
        }
        _ => None,
    };
    if let Some(Value::Object(other)) = other {
        let mut replaced = Map::new();
        for (key, value) in std::mem::take(map) {
            if key == "anyOf" {
                replaced.extend(other.clone());
            } else {
                replaced.insert(key, value);
            }
        }
        *map = replaced;
    }
}

/// A method whose client sends `P` and whose runtime answers `R`.
fn method<P: JsonSchema, R: JsonSchema>(
    name: &'static str,
    reads: &mut SchemaGenerator,
    writes: &mut SchemaGenerator,
) -> (&'static str, Value, Value) {
    (
        name,
        reads.subschema_for::<P>().to_value(),
        writes.subschema_for::<R>().to_value(),
    )
}

/// `{name: {"params": …, "result": …}}`, in order.
fn pairs(entries: Vec<(&'static str, Value, Value)>) -> JsonObject {
    entries
        .into_iter()
        .map(|(name, params, result)| {
            (name.to_owned(), json!({"params": params, "result": result}))
        })
        .collect()
}

/// The read-side definitions whose name the written side holds with
/// another schema, each with a free name (`<Name>Input`, then numbered).
fn renames(reads: &JsonObject, writes: &JsonObject) -> BTreeMap<String, String> {
    let mut renames = BTreeMap::new();
    for (name, schema) in reads {
        if writes.get(name).is_none_or(|written| written == schema) {
            continue;
        }
        let taken = |candidate: &String| {
            writes.contains_key(candidate)
                || reads.contains_key(candidate)
                || renames.values().any(|taken| taken == candidate)
        };
        let mut candidate = format!("{name}Input");
        let mut n = 2;
        while taken(&candidate) {
            candidate = format!("{name}Input{n}");
            n += 1;
        }
        renames.insert(name.clone(), candidate);
    }
    renames
}

/// Points every `$ref` to a renamed definition at its new name.
fn rename_refs(value: &mut Value, renames: &BTreeMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if key == "$ref"
                    && let Value::String(reference) = item
                    && let Some(name) = reference.strip_prefix(&format!("#{DEFINITIONS}/"))
                    && let Some(new) = renames.get(name)
                {
                    *reference = format!("#{DEFINITIONS}/{new}");
                } else {
                    rename_refs(item, renames);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                rename_refs(item, renames);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_document_lists_every_method_notification_and_event() {
        let schema = protocol_schema();
        for method in [
            INITIALIZE,
            SESSION_PROMPT,
            SESSION_RESUME,
            SESSION_WAIT,
            WORKING_DIRECTORY_GET,
            WORKING_DIRECTORY_SET,
            SHUTDOWN,
            SESSION_CANCEL,
            SESSION_EVENTS,
            SESSION_USAGE,
        ] {
            assert!(schema["methods"][method]["params"].is_object(), "{method}");
            assert!(schema["methods"][method]["result"].is_object(), "{method}");
        }
        assert!(schema["runtimeRequests"][APPROVAL_REQUEST]["result"].is_object());
        for notification in [
            SESSION_EVENT,
            SESSION_STATUS,
            SUBAGENT_STARTED,
            SUBAGENT_FINISHED,
            SESSION_USAGE_NOTIFICATION,
            SESSION_DELTA,
            MCP_SERVER,
        ] {
            assert!(schema["notifications"][notification].is_object());
        }
        let events = schema["events"].as_object().map(|events| events.len());
        assert_eq!(events, Some(Event::KINDS.len()));
        assert_eq!(protocol_schema(), schema, "the same document every time");
    }

    /// Every `$ref` names a definition the document holds.
    #[test]
    fn every_reference_resolves() {
        fn walk(value: &Value, root: &Value, seen: &mut usize) {
            match value {
                Value::Object(map) => {
                    if let Some(Value::String(reference)) = map.get("$ref") {
                        let pointer = reference.trim_start_matches('#');
                        assert!(root.pointer(pointer).is_some(), "dangling {reference}");
                        *seen += 1;
                    }
                    map.values().for_each(|item| walk(item, root, seen));
                }
                Value::Array(items) => items.iter().for_each(|item| walk(item, root, seen)),
                _ => {}
            }
        }
        let schema = protocol_schema();
        let mut seen = 0;
        walk(&schema, &schema, &mut seen);
        assert!(seen > 50, "{seen} references");
    }

    #[test]
    fn a_written_optional_field_is_never_null_but_a_required_one_may_be() {
        let schema = protocol_schema();
        let defs = &schema["$defs"];
        assert_eq!(
            defs["InboxSpliced"]["properties"]["removedCount"]["type"],
            "integer"
        );
        assert_eq!(
            defs["InboxSpliced"]["properties"]["outcome"]["$ref"],
            "#/$defs/SpliceOutcome"
        );
        assert_eq!(
            defs["CancelResult"]["properties"]["turn"]["type"],
            json!(["integer", "null"])
        );
        // The read side keeps what serde reads: `null` for an absent rule field.
        assert_eq!(
            defs["ApprovalRule"]["properties"]["mode"]["type"],
            json!(["string", "null"])
        );
    }

    /// The premise of [`present_is_not_null`]: every field serde may skip
    /// is skipped only when `None`.
    #[test]
    fn every_skipped_field_is_skipped_when_none() {
        fn visit(dir: &std::path::Path, found: &mut Vec<String>) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for path in entries.flatten().map(|entry| entry.path()) {
                if path.is_dir() {
                    visit(&path, found);
                } else if path.extension().is_some_and(|ext| ext == "rs") {
                    let text = std::fs::read_to_string(&path).unwrap_or_default();
                    for (i, _) in text.match_indices("skip_serializing_if = \"") {
                        let rest = &text[i + "skip_serializing_if = \"".len()..];
                        if !rest.starts_with("Option::is_none\"") {
                            found.push(format!(
                                "{}: {}",
                                path.display(),
                                &rest[..rest.len().min(40)]
                            ));
                        }
                    }
                }
            }
        }
        let mut found = Vec::new();
        visit(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut found,
        );
        assert!(found.is_empty(), "skipped on another condition: {found:?}");
    }

    #[test]
    fn a_definition_both_sides_hold_differently_is_split() {
        let reads = JsonObject::from_iter([
            ("A".to_owned(), json!({"type": "object"})),
            ("B".to_owned(), json!({"$ref": "#/$defs/A"})),
        ]);
        let writes = JsonObject::from_iter([
            ("A".to_owned(), json!({"type": "object", "required": ["x"]})),
            ("AInput".to_owned(), json!(true)),
        ]);
        let renames = renames(&reads, &writes);
        assert_eq!(renames.get("A").map(String::as_str), Some("AInput2"));
        assert_eq!(renames.get("B"), None);
        let mut b = reads["B"].clone();
        rename_refs(&mut b, &renames);
        assert_eq!(b, json!({"$ref": "#/$defs/AInput2"}));
    }
}
