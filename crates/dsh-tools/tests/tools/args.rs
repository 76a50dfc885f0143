//! Argument checks, answered as the official runtime answers them (issue
//! 26, row 6; texts observed black-box): `Error: invalid arguments: ` and
//! every problem joined by `; ` (missing required properties first, then
//! ill-typed ones in schema order, in depth), with
//! `error {ToolArgsError, INVALID_ARGS}`.

use crate::common::{Fixture, text};
use dsh_tools::{PermissionMode, ToolOutput};
use serde_json::json;

/// The text of a schema failure, after checking its flags and `error`.
fn invalid(out: &ToolOutput) -> String {
    assert!(out.is_error, "{}", text(out));
    assert_eq!(
        serde_json::to_value(&out.error).unwrap_or_default(),
        json!({"name": "ToolArgsError", "code": "INVALID_ARGS"}),
        "{}",
        text(out)
    );
    text(out)
}

#[tokio::test]
async fn arguments_that_are_not_a_json_object_are_refused() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    for raw in ["{\"command\": \"echo", "[1,2]", "null", "\"x\"", "not json"] {
        let out = fx.call("bash", raw).await;
        assert_eq!(
            invalid(&out),
            "Error: invalid arguments: the arguments must be a JSON object"
        );
    }
    assert!(fx.host.events().is_empty());
}

#[tokio::test]
async fn missing_required_properties_are_all_named_in_schema_order() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.call("bash", "{\"description\":\"x\"}").await;
    assert_eq!(
        invalid(&out),
        "Error: invalid arguments: missing required property \"command\""
    );
    for empty in ["", "  ", "{}"] {
        let out = fx.call("read", empty).await;
        assert_eq!(
            invalid(&out),
            "Error: invalid arguments: missing required property \"file_path\""
        );
    }
    let out = fx.call("edit", "{}").await;
    assert_eq!(
        invalid(&out),
        "Error: invalid arguments: missing required property \"file_path\"; missing required property \"old_string\"; missing required property \"new_string\""
    );
    let out = fx
        .call("edit", "{\"new_string\":1,\"file_path\":\"a.txt\"}")
        .await;
    assert_eq!(
        invalid(&out),
        "Error: invalid arguments: missing required property \"old_string\"; \"new_string\" must be a string"
    );
}

#[tokio::test]
async fn ill_typed_properties_are_all_named_in_schema_order() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.call("write", "{\"content\":5,\"file_path\":5}").await;
    assert_eq!(
        invalid(&out),
        "Error: invalid arguments: \"file_path\" must be a string; \"content\" must be a string"
    );
    let out = fx
        .call(
            "read",
            "{\"limit\":\"x\",\"offset\":\"y\",\"file_path\":[1]}",
        )
        .await;
    assert_eq!(
        invalid(&out),
        "Error: invalid arguments: \"file_path\" must be a string; \"offset\" must be a number; \"limit\" must be a number"
    );
    let out = fx
        .call(
            "bash",
            "{\"description\":\"x\",\"command\":\"true\",\"run_in_background\":\"yes\"}",
        )
        .await;
    assert_eq!(
        invalid(&out),
        "Error: invalid arguments: \"run_in_background\" must be a boolean"
    );
    let out = fx
        .call(
            "bash",
            "{\"description\":\"x\",\"command\":\"true\",\"sandbox_permissions\":\"root\"}",
        )
        .await;
    assert_eq!(
        invalid(&out),
        "Error: invalid arguments: \"sandbox_permissions\" must be one of [\"workspace-write\",\"danger-full-access\"]"
    );
}

#[tokio::test]
async fn a_null_is_a_value_of_the_wrong_type() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.call("read", "{\"file_path\":null}").await;
    assert_eq!(
        invalid(&out),
        "Error: invalid arguments: \"file_path\" must be a string"
    );
    let out = fx
        .call(
            "bash",
            "{\"description\":\"x\",\"command\":\"true\",\"timeoutMs\":null}",
        )
        .await;
    assert_eq!(
        invalid(&out),
        "Error: invalid arguments: \"timeoutMs\" must be a number"
    );
}

#[tokio::test]
async fn nested_items_are_named_by_their_path() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let cases = [
        (
            "{\"todos\":[{\"content\":1,\"status\":\"done\"}]}",
            "\"todos[0].content\" must be a string; \"todos[0].status\" must be one of [\"pending\",\"in_progress\",\"completed\"]",
        ),
        (
            "{\"todos\":[{\"content\":\"a\"}]}",
            "missing required property \"todos[0].status\"",
        ),
        (
            "{\"todos\":[{\"content\":\"a\",\"status\":\"pending\",\"owner\":\"me\"}]}",
            "\"todos[0].owner\" is not a declared property (additionalProperties: false)",
        ),
        ("{\"todos\":\"x\"}", "\"todos\" must be an array"),
        ("{\"todos\":[5]}", "\"todos[0]\" must be an object"),
    ];
    for (raw, problem) in cases {
        let out = fx.call("todo_write", raw).await;
        assert_eq!(
            invalid(&out),
            format!("Error: invalid arguments: {problem}")
        );
    }
}

#[tokio::test]
async fn value_checks_of_the_tools_keep_their_own_texts() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    for (raw, expected) in [
        (
            "{\"description\":\"x\",\"command\":\"true\",\"timeoutMs\":-5}",
            "Error: invalid timeoutMs: expected a positive number, got -5",
        ),
        (
            "{\"description\":\"x\",\"command\":\"true\",\"timeoutMs\":-0.5}",
            "Error: invalid timeoutMs: expected a positive number, got -0.5",
        ),
    ] {
        let out = fx.call("bash", raw).await;
        assert!(out.is_error && out.error.is_none());
        assert_eq!(text(&out), expected);
    }
    for (raw, expected) in [
        (
            "{\"file_path\":\"a\",\"offset\":0}",
            "Error: offset must be a positive integer",
        ),
        (
            "{\"file_path\":\"a\",\"offset\":1.5}",
            "Error: offset must be a positive integer",
        ),
        (
            "{\"file_path\":\"a\",\"limit\":-1}",
            "Error: limit must be a positive integer",
        ),
    ] {
        let out = fx.call("read", raw).await;
        assert!(out.is_error && out.error.is_none());
        assert_eq!(text(&out), expected);
    }
}

#[tokio::test]
async fn unknown_top_level_members_are_ignored() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .call(
            "bash",
            "{\"description\":\"x\",\"command\":\"echo ok\",\"extra\":1}",
        )
        .await;
    assert_eq!(text(&out), "ok\n");
}
