"""The HTTP providers end to end: the official SDK drives dsh, dsh talks to
the fake model server (crates/dsh-fake-model) on 127.0.0.1."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT, all_of, first, types

KEY = "sk-test-secret-0123456789"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC"
PNG_SHA = "57cda64cead0869cd5f90dfebb024f4bd9a922aaea91d513de6fa3e949d88921"


@pytest.fixture
def deepseek(dsh_bin, dsh_home, workspace):
    """deepseek(server, **options) -> DeepSeekHarness on provider deepseek-official."""
    harnesses: list[DeepSeekHarness] = []

    def make(server, model="deepseek-v4-flash", env=None, **options) -> DeepSeekHarness:
        options.setdefault("api_key", KEY)
        harness = DeepSeekHarness(
            dsh_bin=str(dsh_bin),
            dsh_home=str(dsh_home),
            cwd=str(workspace),
            provider=options.pop("provider", "deepseek-official"),
            model=model,
            base_url=server.base_url,
            request_timeout_seconds=FRAME_TIMEOUT,
            env={"DSH_RETRY_INITIAL_MS": "5", "DSH_RETRY_MAX_MS": "40", **(env or {})},
            **options,
        )
        harnesses.append(harness)
        return harness

    yield make
    for harness in harnesses:
        harness.close()


def test_plain_text_turn_through_the_messages_api(fake_model, deepseek):
    server = fake_model([{"text": ["Hello from t", "he fake Deep", "Seek server."]}])
    result = deepseek(server).run("Say hi", session_id="session-plain-text")
    assert result.final_response == "Hello from the fake DeepSeek server."
    assert result.finish_reason == "completed"
    assert types(result.events) == [
        "agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start", "system/message",
        "user/message", "user/message", "request/header", "request/context", "session/title",
        "assistant/message", "step/end", "turn/end",
    ]
    message = first(result.events, "assistant/message")["data"]
    assert message["message"]["source"]["replayState"] == {
        "response": {"kind": "deepseek-messages", "version": 1, "model": "deepseek-v4-flash"},
        "blocks": [{"type": "text"}],
    }
    texts = [r for r in message["stream"] if r["type"] == "text-chunks"]
    assert texts[0]["texts"] == ["Hello from t", "he fake Deep", "Seek server."]
    assert message["usage"]["totalTokens"] == message["usage"]["inputTokens"] + message["usage"]["outputTokens"]
    [request] = server.requests()
    assert request["path"] == "/v1/messages"
    headers = request["headers"]
    assert headers["x-api-key"] == f"<redacted len={len(KEY)}>"
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["x-deepseek-harness-session-id"] == "session-plain-text"
    assert "x-deepseek-harness-user-id" not in headers
    body = request["body"]
    assert list(body) == ["model", "stream", "messages", "max_tokens", "thinking", "output_config", "system", "tools"]
    assert [t["name"] for t in body["tools"]][:2] == ["bash", "create_goal"]
    assert set(body["tools"][0]) == {"name", "description", "input_schema"}
    assert body["max_tokens"] == 256000 and body["thinking"] == {"type": "enabled"}
    assert body["output_config"] == {"effort": "high"}
    assert "dsh_session_log" not in body and "dsh_plugin_packages" not in body
    [user] = body["messages"]
    assert user["role"] == "user" and user["content"][0] == {"type": "text", "text": "Say hi"}
    assert len(user["content"]) == 2  # the prompt, then the runtime context


def test_initialize_options_reach_the_request(fake_model, deepseek):
    server = fake_model([{"text": "ok"}])
    result = deepseek(server, model="deepseek-flash", reasoning_effort="off", max_tokens=1000).run("hi")
    assert result.finish_reason == "completed"
    body = server.requests()[0]["body"]
    assert body["thinking"] == {"type": "disabled"} and "output_config" not in body
    assert body["max_tokens"] == 1000 and body["model"] == "deepseek-flash"
    header = first(result.events, "request/header")["data"]["header"]
    assert header["config"] == {"provider": "deepseek-official", "model": "deepseek-flash", "reasoningEffort": "off", "maxTokens": 1000}
    assert "adapterDefaults" not in header
    assert first(result.events, "request/context")["data"]["systemPromptUpdate"] == "in-history"


def test_reasoning_is_kept_and_replayed_with_its_signature(fake_model, deepseek):
    server = fake_model([{"reasoning": "The user wants a greeting.", "text": "Hi there!"}, {"text": "Again."}])
    session = deepseek(server).start_session()
    result = session.run("Greet me")
    assert result.final_response == "Hi there!"
    content = first(result.events, "assistant/message")["data"]["message"]["content"]
    assert content[0] == {"type": "reasoning", "text": "The user wants a greeting."}
    assert session.run("Once more").final_response == "Again."
    history = server.requests()[1]["body"]["messages"]
    assert history[1]["role"] == "assistant"
    assert history[1]["content"][0] == {"type": "thinking", "thinking": "The user wants a greeting.", "signature": "fake-sig-0"}
    assert history[1]["content"][1] == {"type": "text", "text": "Hi there!"}
    assert history[2]["content"] == [{"type": "text", "text": "Once more"}]


def test_a_tool_call_round_trip_sends_tool_use_and_tool_result(fake_model, deepseek):
    server = fake_model([
        {"blocks": [{"text": "Calling."}, {"tool_call": {"id": "toolu_1", "name": "no_such_tool", "arguments": {"x": 1}}}]},
        {"text": "Done."},
    ])
    result = deepseek(server).run("Use a tool")
    assert result.final_response == "Done."
    second = server.requests()[1]["body"]["messages"]
    assert second[1] == {"role": "assistant", "content": [
        {"type": "text", "text": "Calling."},
        {"type": "tool_use", "id": "toolu_1", "name": "no_such_tool", "input": {"x": 1}},
    ]}
    assert second[2] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": 'Error: unknown tool "no_such_tool"'}], "is_error": True},
    ]}


def test_a_server_error_is_retried_then_succeeds(fake_model, deepseek):
    server = fake_model([{"error": {"code": "X", "message": "fake internal error", "status": 500, "request_id": "fake-1"}}, {"text": "Recovered."}])
    result = deepseek(server).run("hi")
    assert result.final_response == "Recovered." and result.finish_reason == "completed"
    tail = types(result.events)[types(result.events).index("session/title") + 1:]
    assert tail == ["assistant/attempt", "llm/retry", "llm/retry-started", "assistant/message", "step/end", "turn/end"]
    retry = first(result.events, "llm/retry")["data"]
    assert list(retry) == ["retryId", "turn", "step", "provider", "mode", "policyKey", "retry", "maxRetries", "delayMs", "failure"]
    assert retry["failure"] == {"message": "fake internal error", "code": "SERVER", "status": 500, "requestId": "fake-1"}
    assert retry["policyKey"] == '["normal",5,["EMPTY_RESPONSE","RATE_LIMIT","SERVER","TIMEOUT","TRANSPORT"],5,40,0.1]'
    assert 4.5 <= retry["delayMs"] <= 5.5
    started = first(result.events, "llm/retry-started")["data"]
    assert started == {"retryId": retry["retryId"], "turn": 1, "step": 1, "retry": 1}
    attempt = first(result.events, "assistant/attempt")["data"]
    assert attempt["stream"][-1]["chunk"]["reason"]["failure"]["code"] == "SERVER"
    assert len(server.requests()) == 2


def test_retries_are_exhausted_after_five_and_the_session_stays_usable(fake_model, deepseek):
    error = {"error": {"code": "X", "message": "fake internal error", "status": 500}}
    server = fake_model([error] * 6 + [{"text": "Back."}])
    session = deepseek(server).start_session()
    result = session.run("hi")
    assert result.finish_reason == "error"
    assert types(result.events).count("assistant/attempt") == 6
    assert [e["data"]["retry"] for e in all_of(result.events, "llm/retry")] == [1, 2, 3, 4, 5]
    delays = [e["data"]["delayMs"] for e in all_of(result.events, "llm/retry")]
    for delay, base in zip(delays, [5, 10, 20, 40, 40]):
        assert base * 0.9 <= delay <= base * 1.1
    end = first(result.events, "turn/end")["data"]["reason"]
    assert end["kind"] == "error" and end["error"]["code"] == "SERVER"
    assert len(server.requests()) == 6
    again = session.run("again")
    assert again.final_response == "Back." and first(again.events, "turn/start")["data"]["turn"] == 2


def test_retry_after_is_honoured_and_too_long_gives_up(fake_model, deepseek):
    server = fake_model([
        {"error": {"code": "X", "message": "slow down", "status": 429, "retry_after_ms": 30}},
        {"text": "ok"},
        {"error": {"code": "X", "message": "slow down", "status": 429, "retry_after_ms": 60000}},
    ])
    session = deepseek(server).start_session()
    result = session.run("one")
    assert first(result.events, "llm/retry")["data"]["delayMs"] == 30
    assert first(result.events, "llm/retry")["data"]["failure"]["providerRetryAfterMs"] == 30
    result = session.run("two")
    assert result.finish_reason == "error" and "llm/retry" not in types(result.events)


@pytest.mark.parametrize(
    "reply, code",
    [
        ({"error": {"code": "X", "message": "invalid api key", "status": 401}}, "AUTH"),
        ({"error": {"code": "X", "message": "no money", "status": 402}}, "QUOTA"),
        ({"error": {"code": "X", "message": "bad", "status": 400}}, "INVALID_REQUEST"),
        ({"error": {"code": "X", "message": "maximum context length exceeded", "status": 400}}, "CONTEXT_WINDOW_EXCEEDED"),
        ({"error": {"code": "X", "message": "teapot", "status": 418}}, "HTTP_418"),
        ({"text": ["par", "tial"], "cut": True}, "STREAM_CLOSED"),
    ],
)
def test_non_retryable_failures_end_the_turn_at_once(fake_model, deepseek, reply, code):
    server = fake_model([reply, {"text": "Works again."}])
    session = deepseek(server).start_session()
    result = session.run("hi")
    assert result.finish_reason == "error"
    assert types(result.events)[-3:] == ["assistant/attempt", "step/end", "turn/end"]
    assert first(result.events, "turn/end")["data"]["reason"]["error"]["code"] == code
    assert len(server.requests()) == 1
    assert session.run("again").final_response == "Works again."


def test_a_cut_stream_keeps_its_partial_blocks_in_the_attempt(fake_model, deepseek):
    server = fake_model([{"text": ["partial", " rest"], "cut": True}])
    result = deepseek(server).run("hi")
    stream = first(result.events, "assistant/attempt")["data"]["stream"]
    assert stream[0]["chunk"] == {"type": "block-start", "index": 0, "blockType": "text"}
    assert stream[1]["type"] == "text-chunks" and stream[1]["texts"] == ["partial"]
    assert stream[-1]["chunk"]["reason"] == {"kind": "error", "failure": {"message": "DeepSeek Messages stream ended before message_stop", "code": "STREAM_CLOSED"}}


def test_an_idle_stream_times_out_and_is_retried(fake_model, deepseek):
    server = fake_model([{"text": ["a", "b"], "stall_ms": 3000}, {"text": "ok"}])
    result = deepseek(server, env={"DSH_STREAM_IDLE_TIMEOUT_MS": "300"}).run("hi")
    assert result.final_response == "ok"
    assert first(result.events, "llm/retry")["data"]["failure"]["code"] == "TIMEOUT"


def test_missing_key_fails_without_any_request_and_the_key_never_leaks(fake_model, deepseek, dsh_home):
    server = fake_model([{"text": "never"}])
    result = deepseek(server, api_key=None).run("hi")
    assert result.finish_reason == "error"
    failure = first(result.events, "turn/end")["data"]["reason"]["error"]
    assert failure["code"] == "MISSING_CREDENTIAL" and "DEEPSEEK_API_KEY" in failure["message"]
    assert server.requests() == []
    # With a key: it reaches the server only as a header and nowhere else.
    server = fake_model([{"text": "fine"}])
    harness = deepseek(server)
    result = harness.run("hi")
    assert result.final_response == "fine"
    assert KEY not in repr(result.events) and KEY not in repr(result.notifications)
    for path in Path(dsh_home).rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_image_prompts_inline_for_image_models_and_placeholder_otherwise(fake_model, deepseek, dsh_home):
    blocks = [{"type": "text", "text": "What colour is this image?"}, {"type": "image", "data": PNG, "mimeType": "image/png"}]
    server = fake_model([{"text": "It is red."}, {"text": "It is red."}])
    result = deepseek(server, model="deepseek-flash").run(blocks)
    receipt = first(result.events, "agent/inbox/spliced")["data"]["inserted"][0]
    assert receipt["content"][1] == {"type": "image", "attachment": {
        "attachmentId": f"sha256:{PNG_SHA}", "mediaType": "image/png", "width": 8, "height": 8, "bytes": 75}}
    stored = Path(dsh_home) / "attachments" / "v1" / "objects" / PNG_SHA[:2] / PNG_SHA
    assert stored.read_bytes() == base64.b64decode(PNG)
    assert oct(stored.stat().st_mode & 0o777) == "0o600"
    content = server.requests()[0]["body"]["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "What colour is this image?"}
    assert PNG_SHA in content[1]["text"]
    assert content[2] == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    deepseek(server, model="deepseek-v4-flash").run(blocks)
    content = server.requests()[1]["body"]["messages"][0]["content"]
    assert content[1] == {"type": "text", "text": f"[image omitted because this model accepts text only; attachment sha256:{PNG_SHA[:8]}]"}


def test_non_canonical_image_data_is_refused(fake_model, deepseek):
    from deepseek_harness.errors import JsonRpcError  # noqa: F401  (the SDK's error type)

    server = fake_model([])
    harness = deepseek(server)
    with pytest.raises(Exception, match="Image upload is not canonical base64."):
        harness.run([{"type": "image", "data": PNG[:-1], "mimeType": "image/png"}])


def test_openai_compatible_provider(fake_model, dsh_bin, dsh_home, workspace):
    server = fake_model([{"reasoning": "think", "text": ["Hel", "lo"]}])
    with DeepSeekHarness(
        dsh_bin=str(dsh_bin), dsh_home=str(dsh_home), cwd=str(workspace),
        provider="openai-compatible", model="my-local-model",
        env={"DSH_OPENAI_BASE_URL": server.base_url + "/v1", "DSH_OPENAI_API_KEY": "local"},
    ) as harness:
        result = harness.run("hi")
    assert result.final_response == "Hello"
    content = first(result.events, "assistant/message")["data"]["message"]["content"]
    assert content == [{"type": "reasoning", "text": "think"}, {"type": "text", "text": "Hello"}]
    request = server.requests()[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["body"]["model"] == "my-local-model"
    assert request["body"]["messages"][0]["role"] == "system"


def test_openai_compatible_without_a_base_url_fails_initialize(dsh_bin, dsh_home, workspace):
    harness = DeepSeekHarness(dsh_bin=str(dsh_bin), dsh_home=str(dsh_home), cwd=str(workspace),
                              provider="openai-compatible", model="m")
    try:
        with pytest.raises(Exception, match="DSH_OPENAI_BASE_URL"):
            harness.start()
    finally:
        harness.close()


def test_a_broken_connection_keeps_the_official_message_and_logs_its_cause(fake_model, make_raw, workspace, dsh_home, home):
    from interop_support import clean_env

    server = fake_model([{"text": ["par", "tial"], "reset": True}, {"text": "ok"}])
    env = clean_env(dsh_home, home, DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY,
                    DSH_RETRY_INITIAL_MS="5", DSH_RETRY_MAX_MS="40")
    raw = make_raw(env=env)
    raw.initialize(workspace, model="deepseek-v4-flash", provider="deepseek-official")
    start = len(raw.frames)
    raw.prompt("s-reset", "hi")
    raw.status("s-reset", "idle", start=start)
    events = [f["params"]["event"] for f in raw.frames[start:] if f.get("method") == "session.event"]
    retry = first(events, "llm/retry")["data"]
    assert retry["failure"] == {"message": "DeepSeek Messages transport failed", "code": "TRANSPORT"}
    assert first(events, "turn/end")["data"]["reason"] == {"kind": "completed"}
    assert raw.shutdown() == 0
    raw._err_reader.join(timeout=5)  # stderr is read to its end after exit
    stderr = raw.stderr.decode(errors="replace")
    assert "DeepSeek Messages transport failed:" in stderr, stderr
    assert KEY not in stderr
