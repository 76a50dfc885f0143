"""JSON-RPC layer at the byte level (compare transcripts: raw_protocol, stdin_eof)."""

from __future__ import annotations

import json

import pytest

from interop_support import (
    RawClient,
    assert_valid_frames,
    first,
    is_response,
    session_events,
    text_of,
    types,
)

UNKNOWN = "unknown DeepSeek Harness SDK runtime method: "


def test_unknown_method(raw_echo):
    assert raw_echo.error("no/such/method", {})["message"] == UNKNOWN + "no/such/method"
    assert raw_echo.error("session/delete", {"sessionId": "s1"})["message"] == UNKNOWN + "session/delete"


def test_error_frame_shape(raw_echo):
    response = raw_echo.request("nope", id="shape")
    assert response == {
        "jsonrpc": "2.0",
        "id": "shape",
        "error": {"code": -32603, "message": UNKNOWN + "nope"},
    }
    assert raw_echo.raw_lines[-1].startswith(b'{"jsonrpc":"2.0","id":"shape","error":{')


IGNORED_LINES = [
    b"this is not json\n",
    b"[1,2,3]\n",
    b"42\n",
    b'"a string"\n',
    b"null\n",
    b'{"jsonrpc":"2.0","foo":1}\n',
    b'{"jsonrpc":"2.0","method":"session/prompt","params":{"sessionId":"x","contentBlocks":[{"type":"text","text":"hi"}]}}\n',
    b'{"jsonrpc":"2.0","id":null,"method":"nope"}\n',
    b'{"jsonrpc":"2.0","id":true,"method":"nope"}\n',
    b'{"jsonrpc":"2.0","id":{"a":1},"method":"nope"}\n',
    b'{"jsonrpc":"2.0","id":"unknown-id","result":{}}\n',
    b'{"jsonrpc":"2.0","id":"unknown-id-2","error":{"code":1,"message":"x"}}\n',
    b'{"jsonrpc":"2.0","id":9,"result":null}\n',
    b'{"jsonrpc":"2.0","method":"initialize","params":{"cwd":"/"}}\n',
    b"{\n",
    b"\xff\xfe not utf-8\n",
]


def test_ignored_lines_produce_no_frames(raw_echo):
    start = len(raw_echo.frames)
    for line in IGNORED_LINES:
        raw_echo.send_raw(line)
    sentinel = raw_echo.request("nope", id="sentinel")
    assert sentinel["error"]["message"] == UNKNOWN + "nope"
    assert raw_echo.result("shutdown", id="bye") == {}
    frames = raw_echo.wait_eof()[start:]
    assert [f.get("id") for f in frames] == ["sentinel", "bye"], raw_echo.summary()
    assert raw_echo.wait_exit() == 0


def test_ignored_lines_before_initialize(raw):
    for line in IGNORED_LINES:
        raw.send_raw(line)
    assert raw.error("session/prompt", {"sessionId": "s"}, id="after-garbage")["message"] == (
        "SDK server is not initialized"
    )
    assert len(raw.frames) == 1


def test_numeric_id_is_echoed_as_number(raw_echo):
    raw_echo.send_raw(b'{"jsonrpc":"2.0","id":7,"method":"nope"}\n')
    _, response = raw_echo.response_to(7)
    assert type(response["id"]) is int and response["id"] == 7
    assert raw_echo.raw_lines[-1].startswith(b'{"jsonrpc":"2.0","id":7,"error":')
    assert response["error"]["message"] == UNKNOWN + "nope"


def test_numeric_id_on_a_successful_method(raw):
    raw.send_raw(b'{"jsonrpc":"2.0","id":0,"method":"shutdown"}\n')
    _, response = raw.response_to(0)
    assert response == {"jsonrpc": "2.0", "id": 0, "result": {}}


def test_frame_without_jsonrpc_member_is_answered(raw_echo):
    raw_echo.send_raw(b'{"id":8,"method":"nope"}\n')
    _, response = raw_echo.response_to(8)
    assert response == {"jsonrpc": "2.0", "id": 8, "error": {"code": -32603, "message": UNKNOWN + "nope"}}


@pytest.mark.parametrize(
    "request_id",
    ["", "0", "  spaced  ", 'quote " and \\ backslash', "ünïcødé-😀", "x" * 300, 12345678901, -3],
)
def test_ids_echoed_verbatim(raw_echo, request_id):
    response = raw_echo.request("nope", id=request_id)
    assert response["id"] == request_id and type(response["id"]) is type(request_id)


def test_crlf_and_blank_lines_tolerated(raw, workspace):
    init = {"jsonrpc": "2.0", "id": "crlf-init", "method": "initialize",
            "params": {"cwd": str(workspace), "provider": "scripted", "model": "echo"}}
    raw.send_raw("\r\n\n   \n\t\n" + json.dumps(init, separators=(",", ":")) + "\r\n")
    _, response = raw.response_to("crlf-init")
    assert "result" in response
    raw.send_raw(b"\r\n\r\n  " + b'{"jsonrpc":"2.0","id":"crlf-2","method":"nope"}' + b"  \r\n")
    _, second = raw.response_to("crlf-2")
    assert second["error"]["message"] == UNKNOWN + "nope"


def test_final_unterminated_line_is_processed_at_eof(raw, workspace):
    raw.send_raw(b'{"jsonrpc":"2.0","id":"no-newline","method":"nope"}')
    raw.close_stdin()
    _, response = raw.response_to("no-newline")
    assert response["error"]["message"] == UNKNOWN + "nope"
    assert raw.wait_exit() == 0


def test_escaped_non_ascii_prompt_round_trips(raw_echo):
    text = "h\u00e9 \U0001F600 \u4e2d\u6587"
    line = json.dumps(
        {"jsonrpc": "2.0", "id": "uni", "method": "session/prompt",
         "params": {"sessionId": "s-uni", "contentBlocks": [{"type": "text", "text": text}]}},
        separators=(",", ":"),
    )
    assert "\\ud83d\\ude00" in line and "\\u00e9" in line  # sent as \u escapes with a surrogate pair
    raw_echo.send_raw(line + "\n")
    raw_echo.response_to("uni")
    raw_echo.status("s-uni", "idle")
    events = session_events(raw_echo.frames, "s-uni")
    receipt = first(events, "agent/inbox/spliced")
    assert receipt["data"]["inserted"][0]["content"] == [{"type": "text", "text": text}]
    assert text_of(first(events, "assistant/message")["data"]["message"]) == text
    # output carries raw UTF-8 (not \u escapes), strictly valid
    assert any(text.encode("utf-8") in line for line in raw_echo.raw_lines)
    assert_valid_frames(raw_echo)


def test_utf8_prompt_sent_raw_round_trips(raw_echo):
    text = "grüße 😀"
    line = json.dumps(
        {"jsonrpc": "2.0", "id": "raw-utf8", "method": "session/prompt",
         "params": {"sessionId": "s-utf8", "contentBlocks": [{"type": "text", "text": text}]}},
        separators=(",", ":"), ensure_ascii=False,
    ).encode("utf-8") + b"\n"
    # write it in two pieces that split a multi-byte sequence
    cut = line.index("😀".encode("utf-8")) + 2
    raw_echo.send_raw(line[:cut])
    raw_echo.send_raw(line[cut:])
    raw_echo.response_to("raw-utf8")
    raw_echo.status("s-utf8", "idle")
    events = session_events(raw_echo.frames, "s-utf8")
    assert text_of(first(events, "assistant/message")["data"]["message"]) == text


def test_request_after_shutdown_gets_no_answer(raw_echo):
    assert raw_echo.result("shutdown", id="first-shutdown") == {}
    try:
        raw_echo.send_raw(b'{"jsonrpc":"2.0","id":"late","method":"session/prompt","params":{"sessionId":"s-raw","contentBlocks":[{"type":"text","text":"hi"}]}}\n')
        raw_echo.send_raw(b'{"jsonrpc":"2.0","id":"late-shutdown","method":"shutdown"}\n')
    except BrokenPipeError:
        pass  # the runtime may already be gone
    frames = raw_echo.wait_eof()
    assert frames[-1]["id"] == "first-shutdown"
    assert not any(f.get("id") in ("late", "late-shutdown") for f in frames)
    assert raw_echo.wait_exit() == 0


def test_shutdown_exits_without_closing_stdin(raw_echo):
    assert raw_echo.result("shutdown") == {}
    raw_echo.wait_eof()
    assert raw_echo.wait_exit() == 0


def test_stdin_eof_exits_zero(raw_echo):
    raw_echo.prompt("s-eof", "hi")
    raw_echo.result("session/wait", {"sessionId": "s-eof"})
    raw_echo.close_stdin()
    assert raw_echo.wait_exit(timeout=5.0) == 0
    raw_echo.wait_eof()


def test_stdin_eof_before_initialize_exits_zero(raw):
    raw.close_stdin()
    assert raw.wait_exit(timeout=5.0) == 0


def test_session_wait_unknown_session(raw_echo):
    assert raw_echo.error("session/wait", {"sessionId": "never-created"})["message"] == (
        "unknown SDK session: never-created"
    )


@pytest.mark.parametrize("params", [{}, {"sessionId": None}, {"sessionId": 5}, {"sessionId": ["s"]}])
def test_session_wait_requires_a_session_id_string(raw_echo, params):
    assert raw_echo.error("session/wait", params)["message"] == "session/wait requires a sessionId string"


def test_session_wait_looks_up_an_empty_session_id(raw_echo):
    assert raw_echo.error("session/wait", {"sessionId": ""})["message"] == "unknown SDK session: "


def test_session_wait_returns_after_idle(make_raw, workspace, scenario):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "slow", "delay_ms": 500}]))
    raw.prompt("s-wait", "hi")
    start = len(raw.frames)
    wait_id = raw.send_request("session/wait", {"sessionId": "s-wait"})
    wait_index, wait_response = raw.response_to(wait_id, start=start)
    assert wait_response["result"] == {}
    idle_index = raw.status("s-wait", "idle")
    assert idle_index < wait_index
    # an idle session answers at once
    assert raw.result("session/wait", {"sessionId": "s-wait"}) == {}


def test_session_wait_never_answers_before_idle_notification(make_raw, workspace, scenario):
    """Repeated prompt + wait: the {} answer always follows the session's idle (ordering race check)."""
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "slow", "delay_ms": 100}]))
    for n in range(10):
        sid = f"s-wait-order-{n}"
        raw.prompt(sid, "hi")
        start = len(raw.frames)
        wait_id = raw.send_request("session/wait", {"sessionId": sid})
        wait_index, _ = raw.response_to(wait_id, start=start)
        idle_index = raw.status(sid, "idle")
        assert idle_index < wait_index, (
            f"round {n}: session/wait answered (frame {wait_index}) before idle (frame {idle_index})"
        )


def test_session_wait_after_working_directory_creation(raw_echo):
    raw_echo.result("session/working-directory/get", {"sessionId": "s-idle"})
    assert raw_echo.result("session/wait", {"sessionId": "s-idle"}) == {}


def test_resume_errors(raw_echo):
    assert raw_echo.error("session/resume", {"sessionId": "never-created"})["message"] == (
        'session "never-created" not found'
    )
    for params in ({}, {"sessionId": ""}, {"sessionId": 3}):
        assert raw_echo.error("session/resume", params)["message"] == (
            "session/resume requires a non-empty sessionId string"
        )


def test_resume_without_params_member(raw_echo):
    assert raw_echo.error("session/resume")["message"] == "session/resume requires a non-empty sessionId string"


def test_array_params_are_treated_as_empty(raw_echo):
    assert raw_echo.error("session/working-directory/get", ["s1"])["message"] == (
        "working-directory requests require a non-empty sessionId"
    )


def test_prompt_with_bad_content_blocks(raw_echo):
    error = raw_echo.error("session/prompt", {"sessionId": "s-bad", "contentBlocks": "not-a-list"})
    assert error["message"]
    error = raw_echo.error("session/prompt", {"sessionId": "s-bad-2"})
    assert error["message"]


def test_prompt_without_session_id(raw_echo):
    error = raw_echo.error("session/prompt", {"contentBlocks": [{"type": "text", "text": "hi"}]})
    assert error["message"]
    # no session was started for it
    assert not [f for f in raw_echo.frames if f.get("method") == "session.status"]


def test_client_cannot_break_framing_with_embedded_newlines(raw_echo):
    text = "line one\nline two\r\nthree\u2028four"
    raw_echo.send({"jsonrpc": "2.0", "id": "nl", "method": "session/prompt",
                   "params": {"sessionId": "s-nl", "contentBlocks": [{"type": "text", "text": text}]}})
    raw_echo.response_to("nl")
    raw_echo.status("s-nl", "idle")
    assert_valid_frames(raw_echo)
    events = session_events(raw_echo.frames, "s-nl")
    assert text_of(first(events, "assistant/message")["data"]["message"]) == text


def test_responses_only_for_requests(raw_echo):
    """A full turn: every response answers one of our ids; everything else is a notification."""
    raw_echo.prompt("s-kinds", "hi")
    raw_echo.status("s-kinds", "idle")
    raw_echo.shutdown()
    methods = {f["method"] for f in raw_echo.frames if "method" in f}
    assert methods <= {"session.event", "session.status", "subagent.started", "subagent.finished"}
    assert all(is_response(f) for f in raw_echo.frames if "method" not in f)
    assert types(session_events(raw_echo.frames, "s-kinds"))[-1] == "turn/end"


def test_large_request_line(raw_echo):
    text = "x" * 300_000
    raw_echo.send({"jsonrpc": "2.0", "id": "big", "method": "session/prompt",
                   "params": {"sessionId": "s-big", "contentBlocks": [{"type": "text", "text": text}]}})
    raw_echo.response_to("big")
    raw_echo.status("s-big", "idle")
    events = session_events(raw_echo.frames, "s-big")
    assert text_of(first(events, "assistant/message")["data"]["message"]) == text


def test_sdk_minimal_raw_client(make_raw, workspace):
    raw: RawClient = make_raw(profile="sdk-minimal")
    raw.initialize(workspace)
    assert raw.error("nope")["message"] == UNKNOWN + "nope"
    assert raw.shutdown() == 0
