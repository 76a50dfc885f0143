"""A prompt sent while a turn runs is queued (compare transcripts: prompt_while_busy)."""

from __future__ import annotations

from interop_support import collect_until_idle, session_events, text_of

SID = "session-busy"


def kind(frame: dict) -> str:
    if frame.get("method") == "session.event":
        return frame["params"]["event"]["type"]
    if frame.get("method") == "session.status":
        return "status:" + frame["params"]["status"]
    return "response"


def event_index(raw, type_: str, turn: int, start: int = 0) -> int:
    index, _ = raw.wait_for(
        lambda f: f.get("method") == "session.event"
        and f["params"]["event"]["type"] == type_
        and f["params"]["event"]["data"].get("turn") == turn,
        start=start,
        what=f"{type_} of turn {turn}",
    )
    return index


def wait_until_idle(raw) -> int:
    """Wait for the session's idle notification (there is exactly one: after the last queued turn)."""
    return raw.status(SID, "idle")


def send_prompt(raw, text: str) -> str:
    return raw.send_request(
        "session/prompt", {"sessionId": SID, "contentBlocks": [{"type": "text", "text": text}]}
    )


def test_prompt_while_busy_is_queued_and_runs_next(make_raw, workspace, scenario):
    raw = make_raw()
    raw.initialize(
        workspace,
        model=scenario([{"text": "Slow first answer.", "delay_ms": 800}, {"text": "Answer to the follow-up."}]),
    )
    first_id = send_prompt(raw, "First question")
    raw.response_to(first_id)

    second_start = len(raw.frames)
    second_id = send_prompt(raw, "Follow-up while busy")
    response_index, response = raw.response_to(second_id, start=second_start)
    message_id = response["result"]["messageId"]

    wait_until_idle(raw)

    turn1_end = event_index(raw, "turn/end", 1)
    # the follow-up was admitted while turn 1 was still running and answered at once
    assert response_index < turn1_end
    receipts = [
        i for i, f in enumerate(raw.frames)
        if kind(f) == "agent/inbox/spliced"
        and any(m.get("id") == message_id for m in f["params"]["event"]["data"].get("inserted", []))
    ]
    assert len(receipts) == 1
    receipt_index = receipts[0]
    receipt = raw.frames[receipt_index]["params"]["event"]["data"]
    assert receipt["target"] == "next-turn" and receipt["start"] == 0
    assert receipt_index < response_index
    between = [kind(f) for f in raw.frames[receipt_index + 1:response_index]]
    assert not any(k.startswith("status:") or k in ("turn/start", "turn/end") for k in between), between

    # turn 2 starts right after turn 1 ends: no idle/running pair in between
    after = [kind(f) for f in raw.frames[turn1_end:turn1_end + 3]]
    assert after == ["turn/end", "turn/start", "agent/inbox/spliced"]
    turn1 = raw.frames[turn1_end]["params"]["event"]["data"]
    assert turn1 == {"turn": 1, "reason": {"kind": "completed"}}
    claim = raw.frames[turn1_end + 2]["params"]["event"]["data"]
    assert claim == {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}

    statuses = [kind(f) for f in raw.frames if kind(f).startswith("status:")]
    assert statuses == ["status:running", "status:idle"]

    events = session_events(raw.frames, SID)
    assert [e["seq"] for e in events] == list(range(len(events)))
    answers = [text_of(e["data"]["message"]) for e in events if e["type"] == "assistant/message"]
    assert answers == ["Slow first answer.", "Answer to the follow-up."]
    turn2_user = [e for e in events if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"][1]
    assert turn2_user["data"]["id"] == message_id
    assert [e["data"] for e in events if e["type"] == "turn/start"] == [{"turn": 1}, {"turn": 2}]


def test_queued_prompts_run_fifo(make_raw, workspace, scenario):
    raw = make_raw()
    raw.initialize(
        workspace,
        model=scenario([{"text": "one", "delay_ms": 800}, {"text": "two"}, {"text": "three"}]),
    )
    raw.response_to(send_prompt(raw, "first"))
    second = raw.response_to(send_prompt(raw, "second"))[1]["result"]["messageId"]
    third = raw.response_to(send_prompt(raw, "third"))[1]["result"]["messageId"]
    wait_until_idle(raw)

    events = session_events(raw.frames, SID)
    receipts = [e["data"] for e in events if e["type"] == "agent/inbox/spliced" and e["data"].get("inserted")]
    # queue positions: turn 1 claimed its own prompt; the two follow-ups queue behind each other
    assert [(r["start"], r["inserted"][0]["id"]) for r in receipts[1:]] == [(0, second), (1, third)]
    prompts = [e["data"]["id"] for e in events if e["type"] == "user/message" and e["data"]["source"]["kind"] == "user"]
    assert prompts[1:] == [second, third]
    answers = [text_of(e["data"]["message"]) for e in events if e["type"] == "assistant/message"]
    assert answers == ["one", "two", "three"]
    assert [e["data"]["turn"] for e in events if e["type"] == "turn/start"] == [1, 2, 3]
    statuses = [f["params"]["status"] for f in raw.frames if f.get("method") == "session.status"]
    assert statuses == ["running", "idle"]


def test_prompt_while_busy_through_sdk_client(make_client, workspace, scenario):
    client = make_client()
    client.initialize(
        cwd=str(workspace),
        provider="scripted",
        model=scenario([{"text": "slow", "delay_ms": 800}, {"text": "queued"}]),
    )
    with client.subscribe_session_notifications(SID) as subscription:
        first_id = client.session_prompt(SID, [{"type": "text", "text": "first"}])
        second_id = client.session_prompt(SID, [{"type": "text", "text": "second"}])
        assert first_id != second_id
        collected = collect_until_idle(subscription, SID)
    events = [n.payload["event"] for n in collected if n.method == "session.event"]
    answers = [text_of(e["data"]["message"]) for e in events if e["type"] == "assistant/message"]
    assert answers == ["slow", "queued"]
    assert [n.payload["status"] for n in collected if n.method == "session.status"] == ["running", "idle"]


def test_session_wait_on_busy_session_answers_after_idle(make_raw, workspace, scenario):
    """The official client flow of prompt_while_busy (prompt, prompt while busy, session/wait),
    repeated on fresh sessions: the {} answer must always follow the idle notification."""
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "slow", "delay_ms": 300}, {"text": "queued"}]))
    for n in range(6):
        sid = f"session-busy-wait-{n}"
        for text in ("first", "second"):
            raw.result("session/prompt", {"sessionId": sid, "contentBlocks": [{"type": "text", "text": text}]})
        start = len(raw.frames)
        wait_id = raw.send_request("session/wait", {"sessionId": sid})
        wait_index, response = raw.response_to(wait_id, start=start)
        assert response["result"] == {}
        idle_index = raw.status(sid, "idle")
        assert idle_index < wait_index, (
            f"round {n}: session/wait answered (frame {wait_index}) before session.status idle (frame {idle_index})"
        )
        assert [kind(f) for f in raw.frames[idle_index - 1:idle_index + 1]] == ["turn/end", "status:idle"]
