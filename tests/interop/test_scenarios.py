"""Scripted-provider scenario files: reasoning, deltas, tool calls, max tokens, errors."""

from __future__ import annotations

import json

from interop_support import all_of, first, run_bounded, types

UNKNOWN = "no_such_tool"  # never a real tool, so always UNKNOWN_TOOL


def assistant_messages(result):
    return [e["data"]["message"] for e in all_of(result.events, "assistant/message")]


def test_yaml_scenario_reasoning_then_text(make_harness, base_dir):
    path = base_dir / "reasoning.yaml"
    path.write_text(
        "replies:\n"
        "  - blocks:\n"
        "      - reasoning: \"Let me think\"\n"
        "      - text: \"Hello\"\n",
        encoding="utf-8",
    )
    harness = make_harness(model=str(path))
    result = run_bounded(harness.start_session("session-reasoning"), "Think first")

    assert result.final_response == "Hello"  # text only, no reasoning
    assert result.finish_reason == "completed"
    [message] = assistant_messages(result)
    assert message["content"] == [
        {"type": "reasoning", "text": "Let me think"},
        {"type": "text", "text": "Hello"},
    ]


def test_text_deltas_are_joined_and_recorded_in_stream(make_harness, scenario):
    harness = make_harness(model=scenario([{"blocks": [{"text": ["Hel", "lo", " world"]}]}]))
    result = run_bounded(harness.start_session("session-deltas"), "Stream it")

    assert result.final_response == "Hello world"
    [event] = all_of(result.events, "assistant/message")
    assert event["data"]["message"]["content"] == [{"type": "text", "text": "Hello world"}]
    chunks = [r for r in event["data"]["stream"] if r.get("type") == "text-chunks"]
    assert [r["texts"] for r in chunks] == [["Hel", "lo", " world"]]
    assert len(chunks[0]["dt"]) == 2
    # no streaming notifications: only session.event / session.status
    assert {n.method for n in result.notifications} == {"session.event", "session.status"}


def test_plain_text_reply(make_harness, scenario):
    harness = make_harness(model=scenario([{"text": "Hello from the script."}]))
    result = run_bounded(harness.start_session("session-text"), "Say hi")
    assert (result.final_response, result.finish_reason) == ("Hello from the script.", "completed")


def test_unknown_tool_call_then_next_step(make_harness, scenario):
    harness = make_harness(
        model=scenario(
            [
                {
                    "blocks": [
                        {"text": "I will call a tool."},
                        {"tool_call": {"id": "call_1", "name": UNKNOWN, "arguments": {"x": 1}}},
                    ]
                },
                {"text": "Done after the tool."},
            ]
        )
    )
    result = run_bounded(harness.start_session("session-tool"), "Use a tool")
    events = result.events

    assert result.final_response == "Done after the tool."
    assert result.finish_reason == "completed"
    assert types(events)[10:] == [
        "assistant/message",
        "tool/call",
        "tool/result",
        "step/end",
        "step/start",
        "assistant/message",
        "step/end",
        "turn/end",
    ]

    first_message = assistant_messages(result)[0]
    assert first_message["content"][0] == {"type": "text", "text": "I will call a tool."}
    call_block = first_message["content"][1]
    assert (call_block["type"], call_block["id"], call_block["name"]) == ("tool-call", "call_1", UNKNOWN)
    assert isinstance(call_block["arguments"], str)
    assert json.loads(call_block["arguments"]) == {"x": 1}

    call = first(events, "tool/call")
    assert call["data"]["callId"] == "call_1" and call["data"]["name"] == UNKNOWN
    assert (call["data"]["turn"], call["data"]["step"]) == (1, 1)
    assert json.loads(call["data"]["arguments"]) == {"x": 1}

    result_event = first(events, "tool/result")
    assert result_event["sourceEventSeqs"] == [call["seq"]]
    assert result_event["surfaceOp"] == "append"
    data = result_event["data"]
    assert (data["turn"], data["step"]) == (1, 1)
    assert data["error"] == {"name": "ToolNotFoundError", "code": "UNKNOWN_TOOL"}
    tool_message = data["message"]
    assert tool_message["role"] == "tool"
    assert tool_message["source"] == {"kind": "tool", "callId": "call_1"}
    assert tool_message["toolCallId"] == "call_1"
    assert tool_message["isError"] is True
    assert tool_message["content"] == [{"type": "text", "text": f'Error: unknown tool "{UNKNOWN}"'}]

    step_starts = [e["data"] for e in all_of(events, "step/start")]
    assert step_starts == [{"turn": 1, "step": 1}, {"turn": 1, "step": 2}]
    # the second step does not resend the header
    assert len(all_of(events, "request/header")) == 1


def test_max_tokens_drops_truncated_tool_call(make_harness, scenario):
    harness = make_harness(
        model=scenario(
            [
                {
                    "blocks": [
                        {"text": "partial"},
                        {"tool_call": {"id": "call_cut", "name": UNKNOWN, "arguments": {"x": 1}}},
                    ],
                    "stop": "max_tokens",
                }
            ]
        )
    )
    result = run_bounded(harness.start_session("session-max-tokens"), "Long answer")

    assert result.finish_reason == "max-tokens"
    assert result.final_response == "partial"
    assert result.events[-1]["data"] == {"turn": 1, "reason": {"kind": "max-tokens"}}
    assert "tool/call" not in types(result.events)
    assert "tool/result" not in types(result.events)
    assert len(all_of(result.events, "step/start")) == 1
    [message] = assistant_messages(result)
    assert [b["type"] for b in message["content"]] == ["text"]


def test_max_tokens_text_only(make_harness, scenario):
    harness = make_harness(model=scenario([{"text": "cut off", "stop": "max_tokens"}]))
    result = run_bounded(harness.start_session("session-max-tokens-text"), "Long answer")
    assert (result.final_response, result.finish_reason) == ("cut off", "max-tokens")


def test_error_reply_ends_turn_and_session_stays_usable(make_harness, scenario):
    harness = make_harness(
        model=scenario(
            [
                {"error": {"code": "AUTH", "message": "invalid api key", "status": 401}},
                {"text": "recovered"},
            ]
        )
    )
    session = harness.start_session("session-error")
    failed = run_bounded(session, "first")

    assert failed.finish_reason == "error"
    assert failed.final_response == ""
    turn_end = failed.events[-1]
    assert turn_end["type"] == "turn/end"
    error = turn_end["data"]["reason"]["error"]
    assert turn_end["data"]["reason"]["kind"] == "error"
    assert error["code"] == "AUTH"
    assert error["message"] == "invalid api key"
    assert error.get("status") == 401
    assert types(failed.events)[-3:] == ["assistant/attempt", "step/end", "turn/end"]
    assert "assistant/message" not in types(failed.events)

    recovered = run_bounded(session, "second")
    assert (recovered.final_response, recovered.finish_reason) == ("recovered", "completed")
    assert first(recovered.events, "turn/start")["data"] == {"turn": 2}


def test_script_exhausted_ends_turn_with_error(make_harness, scenario):
    harness = make_harness(model=scenario([{"text": "only reply"}]))
    session = harness.start_session("session-exhausted")
    assert run_bounded(session, "one").final_response == "only reply"
    second = run_bounded(session, "two")
    assert second.finish_reason == "error"
    assert isinstance(second.events[-1]["data"]["reason"]["error"]["message"], str)


def test_each_session_plays_its_own_script(make_harness, scenario):
    harness = make_harness(model=scenario([{"text": "first reply"}, {"text": "second reply"}]))
    a = harness.start_session("session-script-a")
    b = harness.start_session("session-script-b")
    assert run_bounded(a, "x").final_response == "first reply"
    assert run_bounded(b, "y").final_response == "first reply"
    assert run_bounded(a, "z").final_response == "second reply"
