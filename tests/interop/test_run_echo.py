"""One Session.run with the scripted echo model (compare transcripts: plain_text)."""

from __future__ import annotations

import json

from interop_support import (
    DELIVERY_ACCEPTED,
    POLICY_EVENT_TYPES,
    SERVER_NAME,
    assert_valid_frames,
    first,
    notification_events,
    run_bounded,
    seqs,
    session_events,
    text_of,
    types,
)


def official_plain_text(transcripts):
    return json.loads((transcripts / "plain_text" / "result.json").read_text())["steps"][0]


def test_run_echo_completes_with_prompt_text(harness):
    result = run_bounded(harness.start_session("session-echo"), "Say hi")
    assert result.final_response == "Say hi"
    assert result.finish_reason == "completed"
    assert result.session_id == "session-echo"


def test_run_event_types_match_official_plain_text(harness, transcripts):
    official = official_plain_text(transcripts)
    expected_types = [t for t in official["event_types"] if t != DELIVERY_ACCEPTED]
    # drop the session.event notification that carried delivery-accepted
    delivery_index = official["event_types"].index(DELIVERY_ACCEPTED)
    expected_methods, event_index = [], 0
    for method in official["notification_methods"]:
        if method == "session.event":
            event_index += 1
            if event_index - 1 == delivery_index:
                continue
        expected_methods.append(method)

    result = run_bounded(harness.start_session("session-plain-text"), "Say hi")

    assert types(result.events) == expected_types
    assert [n.method for n in result.notifications] == expected_methods
    # seq continues right after the three policy events and has no gaps
    assert seqs(result.events) == list(range(3, 3 + len(expected_types)))


def test_run_event_contents(harness):
    result = run_bounded(harness.start_session("session-contents"), "Say hi")
    events = result.events
    receipt, turn_start, claim = events[0], events[1], events[2]

    assert receipt["data"]["target"] == "next-turn" and receipt["data"]["start"] == 0
    assert "removedCount" not in receipt["data"]
    [prompt_message] = receipt["data"]["inserted"]
    assert prompt_message["role"] == "user"
    assert prompt_message["source"] == {"kind": "user"}
    assert prompt_message["content"] == [{"type": "text", "text": "Say hi"}]

    assert turn_start["data"] == {"turn": 1}
    assert claim["data"] == {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}
    assert first(events, "step/start")["data"] == {"turn": 1, "step": 1}

    system = first(events, "system/message")
    assert system["data"]["message"]["role"] == "system"
    assert system["data"]["message"]["source"] == {"kind": "system-prompt"}
    assert system.get("surfaceOp") == "append"

    user_messages = [e for e in events if e["type"] == "user/message"]
    assert user_messages[0]["data"] == prompt_message  # the prompt, same id as the receipt
    assert user_messages[0]["surfaceOp"] == "append"
    assert user_messages[1]["data"]["source"]["kind"] == "runtime-context"

    header = first(events, "request/header")
    assert header["data"]["reason"] == "initial"
    assert header["data"]["header"]["config"]["provider"] == "scripted"
    assert header["data"]["header"]["config"]["model"] == "echo"
    context = first(events, "request/context")
    assert context["data"]["provider"] == "scripted" and context["data"]["model"] == "echo"

    title = first(events, "session/title")
    assert title["data"]["messageSeqs"] == [user_messages[0]["seq"]]
    assert title["data"]["source"] == {"kind": "fallback"}
    assert title["data"]["title"] == "Say hi"

    assistant = first(events, "assistant/message")
    assert assistant["data"]["turn"] == 1 and assistant["data"]["step"] == 1
    assert assistant["data"]["message"]["role"] == "assistant"
    assert assistant["data"]["message"]["source"]["kind"] == "model"
    assert text_of(assistant["data"]["message"]) == "Say hi"
    assert assistant["surfaceOp"] == "append"

    assert first(events, "step/end")["data"] == {"turn": 1, "step": 1}
    assert events[-1]["type"] == "turn/end"
    assert events[-1]["data"] == {"turn": 1, "reason": {"kind": "completed"}}

    statuses = [n.payload for n in result.notifications if n.method == "session.status"]
    assert statuses == [
        {"sessionId": "session-contents", "status": "running"},
        {"sessionId": "session-contents", "status": "idle"},
    ]
    for event in events:
        assert list(event)[:4] == ["type", "seq", "time", "data"], event
        assert isinstance(event["time"], int)


def test_raw_prompt_frames_are_valid_json_in_canonical_order(raw, workspace):
    init = raw.request("initialize", {"cwd": str(workspace), "provider": "scripted", "model": "echo"})
    assert init["result"]["serverInfo"]["name"] == SERVER_NAME

    start = len(raw.frames)
    prompt_id = raw.send_request(
        "session/prompt", {"sessionId": "s-raw", "contentBlocks": [{"type": "text", "text": "Say hi"}]}
    )
    response_index, response = raw.response_to(prompt_id, start=start)
    idle_index = raw.status("s-raw", "idle", start=start)
    assert raw.shutdown() == 0
    assert_valid_frames(raw)

    frames = raw.frames[start:]
    events = session_events(frames, "s-raw")
    assert types(events)[:3] == POLICY_EVENT_TYPES
    assert seqs(events) == list(range(len(events)))
    receipt = events[3]
    assert response["result"] == {"messageId": receipt["data"]["inserted"][0]["id"]}

    # receipt, running, turn/start and claim come first and precede the response (PROTOCOL 6.5);
    # later turn events may or may not precede it
    kinds = [
        f["params"]["event"]["type"] if f.get("method") == "session.event" else f["params"].get("status")
        for f in raw.frames[start:idle_index + 1]
        if "method" in f
    ]
    required = POLICY_EVENT_TYPES + ["agent/inbox/spliced", "running", "turn/start", "agent/inbox/spliced"]
    assert kinds[: len(required)] == required
    assert response_index >= start + len(required)
    # idle is the last notification and follows turn/end
    assert raw.frames[idle_index - 1]["params"]["event"]["type"] == "turn/end"


def test_stdout_frames_are_compact_and_stderr_empty(raw, workspace):
    raw.initialize(workspace)
    raw.prompt("s-compact", "Say hi")
    raw.status("s-compact", "idle")
    assert raw.shutdown() == 0
    assert_valid_frames(raw)
    for line in raw.raw_lines:
        frame = json.loads(line)
        reserialised = json.dumps(frame, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
        assert line == reserialised, f"frame is not compact JSON: {line[:300]!r}"
    raw.proc.wait()
    raw._err_reader.join(2)
    assert raw.stderr == b"", f"stderr should stay empty: {raw.stderr[:500]!r}"


def test_run_notifications_cover_only_this_session(harness):
    result = run_bounded(harness.start_session("session-only"), "hello")
    assert {n.payload.get("sessionId") for n in result.notifications} == {"session-only"}
    assert notification_events(result.notifications, "session-only") == result.events
