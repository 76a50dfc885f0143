//! Argument parsing: invalid JSON, wrong shapes, missing and ill-typed
//! parameters.

use crate::common::{Fixture, text};
use dsh_tools::PermissionMode;

#[tokio::test]
async fn invalid_json_is_an_error_result() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.call("bash", "{\"command\": \"echo").await;
    assert!(out.is_error);
    assert!(
        text(&out).starts_with("Error: the arguments for bash are not valid JSON"),
        "{}",
        text(&out)
    );
    assert!(fx.host.events().is_empty());
}

#[tokio::test]
async fn arguments_must_be_an_object() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.call("read", "[1,2]").await;
    assert_eq!(
        text(&out),
        "Error: the arguments for read must be a JSON object, got an array."
    );
}

#[tokio::test]
async fn missing_required_parameters_are_named() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx.call("bash", "{\"description\":\"x\"}").await;
    assert_eq!(
        text(&out),
        "Error: invalid arguments for bash: parameter \"command\" is required."
    );
    let empty = fx.call("read", "").await;
    assert_eq!(
        text(&empty),
        "Error: invalid arguments for read: parameter \"file_path\" is required."
    );
    let null = fx.call("read", "{\"file_path\":null}").await;
    assert!(text(&null).contains("\"file_path\" is required and must not be null"));
}

#[tokio::test]
async fn ill_typed_parameters_are_named() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .call(
            "bash",
            "{\"description\":\"x\",\"command\":\"true\",\"timeoutMs\":\"5\"}",
        )
        .await;
    assert_eq!(
        text(&out),
        "Error: invalid arguments for bash: parameter \"timeoutMs\" must be a number, got a string."
    );
    let bad_enum = fx
        .call(
            "bash",
            "{\"description\":\"x\",\"command\":\"true\",\"sandbox_permissions\":\"root\"}",
        )
        .await;
    assert!(text(&bad_enum).contains("parameter \"sandbox_permissions\" must be one of \"workspace-write\", \"danger-full-access\""));
    let nested = fx
        .call(
            "todo_write",
            "{\"todos\":[{\"content\":\"a\",\"status\":\"done\"}]}",
        )
        .await;
    assert!(
        text(&nested).contains("parameter \"todos[0].status\" must be one of"),
        "{}",
        text(&nested)
    );
    let extra = fx
        .call(
            "todo_write",
            "{\"todos\":[{\"content\":\"a\",\"status\":\"pending\",\"owner\":\"me\"}]}",
        )
        .await;
    assert!(
        text(&extra).contains("has no property \"owner\""),
        "{}",
        text(&extra)
    );
    let negative = fx
        .call(
            "bash",
            "{\"description\":\"x\",\"command\":\"true\",\"timeoutMs\":-1}",
        )
        .await;
    assert!(negative.is_error && text(&negative).contains("\"timeoutMs\""));
}

#[tokio::test]
async fn optional_nulls_and_unknown_members_are_tolerated() {
    let fx = Fixture::new(PermissionMode::WorkspaceWrite);
    let out = fx
        .call(
            "bash",
            "{\"description\":\"x\",\"command\":\"echo ok\",\"workdir\":null,\"extra\":1}",
        )
        .await;
    assert_eq!(text(&out), "ok\n");
}
