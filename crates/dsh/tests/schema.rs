//! `dsh --print-schema`: the protocol's JSON Schema, generated from the
//! wire types, and its checked-in copy `docs/protocol.schema.json`, which
//! must stay equal to it byte for byte.

use dsh_protocol::catalog::Event;
use dsh_protocol::methods::{
    APPROVAL_REQUEST, INITIALIZE, SESSION_CANCEL, SESSION_DELTA, SESSION_EVENTS, SESSION_PROMPT,
    SESSION_RESUME, SESSION_USAGE, SESSION_USAGE_NOTIFICATION, SESSION_WAIT, SHUTDOWN,
    WORKING_DIRECTORY_GET, WORKING_DIRECTORY_SET,
};
use dsh_protocol::methods::{MCP_SERVER, SESSION_FORK, SESSION_LIST};
use dsh_protocol::notifications::{
    SESSION_EVENT, SESSION_STATUS, SUBAGENT_FINISHED, SUBAGENT_STARTED,
};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

const REGENERATE: &str = "cargo run -p dsh -- --print-schema > docs/protocol.schema.json";

const METHODS: [&str; 12] = [
    INITIALIZE,
    SESSION_PROMPT,
    SESSION_RESUME,
    SESSION_WAIT,
    WORKING_DIRECTORY_GET,
    WORKING_DIRECTORY_SET,
    SHUTDOWN,
    SESSION_CANCEL,
    SESSION_EVENTS,
    SESSION_LIST,
    SESSION_FORK,
    SESSION_USAGE,
];

/// What `dsh --print-schema` prints, after checking it exits 0 quietly.
fn printed() -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_dsh"))
        .arg("--print-schema")
        .env_remove("DSH_HOME")
        .output()
        .unwrap_or_else(|e| panic!("run dsh --print-schema: {e}"));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn schema() -> Value {
    serde_json::from_slice(&printed()).unwrap_or_else(|e| panic!("not JSON: {e}"))
}

/// `schema` with its `$ref` (if any) followed within `root`.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let target = root
                .pointer(reference.trim_start_matches('#'))
                .unwrap_or_else(|| panic!("dangling {reference}"));
            resolve(root, target)
        }
        None => schema,
    }
}

fn required(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[test]
fn the_checked_in_schema_is_what_dsh_prints() {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/protocol.schema.json");
    let checked_in = std::fs::read(&path).unwrap_or_default();
    let printed = printed();
    assert!(printed.ends_with(b"}\n"), "pretty JSON and one newline");
    if checked_in != printed {
        let checked_in = String::from_utf8_lossy(&checked_in);
        let printed = String::from_utf8_lossy(&printed);
        let first = checked_in
            .lines()
            .zip(printed.lines())
            .position(|(a, b)| a != b)
            .map(|i| i + 1)
            .unwrap_or(checked_in.lines().count().min(printed.lines().count()) + 1);
        panic!(
            "{} is not what `dsh --print-schema` prints (first difference at line {first}); \
             regenerate it with `{REGENERATE}`",
            path.display()
        );
    }
}

#[test]
fn every_method_request_notification_and_event_is_described() {
    let schema = schema();
    assert_eq!(schema["title"], "dsh protocol");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let methods = schema["methods"].as_object().cloned().unwrap_or_default();
    assert_eq!(methods.keys().collect::<Vec<_>>(), METHODS, "in order");
    for method in METHODS {
        for part in ["params", "result"] {
            let part_schema = &schema["methods"][method][part];
            assert!(resolve(&schema, part_schema).is_object(), "{method} {part}");
        }
    }
    let approval = &schema["runtimeRequests"][APPROVAL_REQUEST];
    let params = resolve(&schema, &approval["params"]);
    assert!(required(params).contains(&"approvalId"), "{params}");
    let answer = resolve(&schema, &approval["result"]);
    assert_eq!(required(answer), ["decision"], "{answer}");
    let notifications = schema["notifications"]
        .as_object()
        .map(|n| n.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    assert_eq!(
        notifications,
        [
            SESSION_EVENT,
            SESSION_STATUS,
            SUBAGENT_STARTED,
            SUBAGENT_FINISHED,
            SESSION_USAGE_NOTIFICATION,
            SESSION_DELTA,
            MCP_SERVER
        ]
    );
    let events = schema["events"]
        .as_object()
        .map(|e| e.keys().cloned().collect::<Vec<_>>())
        .unwrap_or_default();
    assert_eq!(events, Event::KINDS, "every event type, in catalogue order");
    for kind in Event::KINDS {
        assert!(
            resolve(&schema, &schema["events"][kind]).is_object(),
            "{kind}"
        );
    }
}

#[test]
fn the_schemas_say_what_is_required_and_what_may_be_left_out() {
    let schema = schema();
    // A client must name the session it cancels; the flags are optional.
    let cancel = resolve(&schema, &schema["methods"][SESSION_CANCEL]["params"]);
    assert_eq!(required(cancel), ["sessionId"], "{cancel}");
    assert_eq!(cancel["properties"]["dropQueued"]["type"], "boolean");
    // `initialize` needs only `cwd`, and takes the extension fields.
    let initialize = &schema["methods"][INITIALIZE]["params"]["allOf"];
    let official = resolve(&schema, &initialize[0]);
    assert_eq!(required(official), ["cwd"], "{official}");
    assert_eq!(
        official["properties"]["provider"]["default"],
        "deepseek-official"
    );
    let extensions = resolve(&schema, &initialize[1]);
    assert!(extensions["properties"]["clientCapabilities"].is_object());
    // Every turn/end carries its turn and reason, a reason its kind.
    let turn_end = resolve(&schema, &schema["events"]["turn/end"]);
    assert_eq!(required(turn_end), ["turn", "reason"], "{turn_end}");
    let reason = resolve(&schema, &turn_end["properties"]["reason"]);
    let kinds: Vec<&Value> = reason["oneOf"]
        .as_array()
        .map(|variants| {
            variants
                .iter()
                .filter_map(|v| v.pointer("/properties/kind/const"))
                .collect()
        })
        .unwrap_or_default();
    assert!(kinds.iter().any(|k| *k == "completed"), "{reason}");
    // A field written only when set is optional; the envelope is closed.
    let event = resolve(
        &schema,
        &resolve(&schema, &schema["notifications"][SESSION_EVENT])["properties"]["event"],
    );
    assert_eq!(required(event), ["type", "seq", "time", "data"], "{event}");
    assert_eq!(event["additionalProperties"], false);
}
