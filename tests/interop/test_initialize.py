"""initialize: validation errors, re-initialize, before-initialize errors, serverInfo."""

from __future__ import annotations

import pytest
from deepseek_harness.errors import JsonRpcError

from interop_support import SERVER_NAME, first, run_bounded, session_events, text_of


def first_line(error: JsonRpcError) -> str:
    # the SDK appends runtime diagnostics (exit code, stderr tail) on later lines
    return error.message.splitlines()[0]


def test_server_info(make_client, workspace):
    client = make_client()
    response = client.initialize(cwd=str(workspace), provider="scripted", model="echo")
    assert response.serverInfo is not None
    assert response.serverInfo.name == SERVER_NAME
    assert isinstance(response.serverInfo.version, str) and response.serverInfo.version


def test_raw_initialize_result_shape(raw, workspace):
    result = raw.initialize(workspace)
    assert list(result) == ["serverInfo"]
    assert result["serverInfo"]["name"] == SERVER_NAME
    assert isinstance(result["serverInfo"]["version"], str)


def test_unknown_provider(make_client, workspace):
    client = make_client()
    with pytest.raises(JsonRpcError) as error:
        client.initialize(cwd=str(workspace), provider="not-a-provider", model="echo")
    assert error.value.code == -32603
    assert first_line(error.value) == 'no adapter registered for provider "not-a-provider"'


def test_unsupported_effort_through_harness(make_harness):
    harness = make_harness(reasoning_effort="ultra")
    with pytest.raises(JsonRpcError) as error:
        harness.start()
    assert error.value.code == -32603
    assert first_line(error.value) == 'provider "scripted" model "echo" does not support reasoning effort "ultra"'


@pytest.mark.parametrize("max_tokens", [0, -1, 1.5, "100", 2**53])
def test_max_tokens_must_be_positive_safe_integer(raw, workspace, max_tokens):
    error = raw.error(
        "initialize", {"cwd": str(workspace), "provider": "scripted", "model": "echo", "maxTokens": max_tokens}
    )
    assert error["message"] == "initialize maxTokens must be a positive safe integer"


@pytest.mark.parametrize("effort", ["", 5])
def test_reasoning_effort_must_be_non_empty_string(raw, workspace, effort):
    error = raw.error(
        "initialize", {"cwd": str(workspace), "provider": "scripted", "model": "echo", "reasoningEffort": effort}
    )
    assert error["message"] == "initialize reasoningEffort must be a non-empty string"


def test_initialize_without_cwd_fails(raw):
    error = raw.error("initialize", {"provider": "scripted", "model": "echo"})
    assert isinstance(error["message"], str) and error["message"]
    # still not initialized
    assert raw.error("session/prompt", {"sessionId": "s", "contentBlocks": []})["message"] == (
        "SDK server is not initialized"
    )


@pytest.mark.parametrize("effort", ["off", "low", "high", "max"])
def test_supported_efforts(raw, workspace, effort):
    assert raw.initialize(workspace, reasoningEffort=effort)["serverInfo"]["name"] == SERVER_NAME


def test_options_reach_the_request_header(make_harness):
    harness = make_harness(reasoning_effort="off", max_tokens=1000)
    result = run_bounded(harness.start_session("session-init-options"), "hi")
    assert (result.final_response, result.finish_reason) == ("hi", "completed")
    header = first(result.events, "request/header")["data"]["header"]
    assert header["config"] == {"provider": "scripted", "model": "echo", "reasoningEffort": "off", "maxTokens": 1000}
    assert list(header["config"]) == ["provider", "model", "reasoningEffort", "maxTokens"]
    assert "adapterDefaults" not in header


@pytest.mark.parametrize(
    "model",
    ["no-such-model", "relative/scenario.json", "/nonexistent/dir/scenario.json", "DIRECTORY", "INVALID_FILE"],
)
def test_scripted_model_must_be_echo_or_valid_scenario(raw, workspace, base_dir, model):
    if model == "DIRECTORY":
        model = str(base_dir)
    elif model == "INVALID_FILE":
        bad = base_dir / "bad-scenario.yaml"
        bad.write_text("replies: [[[ this is not a scenario\n", encoding="utf-8")
        model = str(bad)
    error = raw.error("initialize", {"cwd": str(workspace), "provider": "scripted", "model": model})
    assert error["message"]


def test_reinitialize_changes_model_for_new_sessions(raw, workspace, scenario):
    raw.initialize(workspace)
    raw.prompt("s-before", "echo me")
    raw.status("s-before", "idle")

    path = scenario([{"text": "scripted answer"}])
    result = raw.initialize(workspace, model=path)
    assert result["serverInfo"]["name"] == SERVER_NAME

    start = len(raw.frames)
    raw.prompt("s-after", "ignored prompt")
    raw.status("s-after", "idle", start=start)
    events = session_events(raw.frames[start:], "s-after")
    assert text_of(first(events, "assistant/message")["data"]["message"]) == "scripted answer"
    assert first(events, "request/context")["data"]["model"] == path


def test_failed_reinitialize_keeps_server_initialized(raw, workspace):
    raw.initialize(workspace)
    raw.error("initialize", {"cwd": str(workspace), "provider": "not-a-provider", "model": "echo"})
    assert raw.result("session/working-directory/get", {"sessionId": "s-still"}) == {"cwd": str(workspace)}


@pytest.mark.parametrize(
    "method,params",
    [
        ("session/prompt", {"sessionId": "s1", "contentBlocks": [{"type": "text", "text": "hi"}]}),
        ("session/resume", {"sessionId": "s1"}),
        ("session/wait", {"sessionId": "s1"}),
        ("session/working-directory/get", {"sessionId": "s1"}),
        ("session/working-directory/set", {"sessionId": "s1", "path": "."}),
    ],
)
def test_methods_before_initialize(raw, method, params):
    assert raw.error(method, params)["message"] == "SDK server is not initialized"


def test_unknown_method_before_initialize(raw):
    assert raw.error("no/such/method", {})["message"] == "unknown DeepSeek Harness SDK runtime method: no/such/method"


def test_shutdown_before_initialize(raw):
    assert raw.shutdown() == 0
