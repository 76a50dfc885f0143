"""Two Session.run calls on one session (compare transcripts: two_turns)."""

from __future__ import annotations

import json

from interop_support import DELIVERY_ACCEPTED, first, run_bounded, seqs, text_of, types

FIRST_TURN_ONLY = {"system/message", "request/header", "request/context", "session/title"}


def test_second_turn_continues_the_session(harness, transcripts):
    session = harness.start_session("session-two-turns")
    first_run = run_bounded(session, "First question")
    second_run = run_bounded(session, "Second question")

    assert (first_run.final_response, first_run.finish_reason) == ("First question", "completed")
    assert (second_run.final_response, second_run.finish_reason) == ("Second question", "completed")

    # seq continues right after turn 1, without gaps
    assert second_run.events[0]["seq"] == first_run.events[-1]["seq"] + 1
    all_seqs = seqs(first_run.events) + seqs(second_run.events)
    assert all_seqs == list(range(all_seqs[0], all_seqs[0] + len(all_seqs)))

    official = json.loads((transcripts / "two_turns" / "result.json").read_text())["steps"][1]
    expected = [t for t in official["event_types"] if t != DELIVERY_ACCEPTED]
    assert types(second_run.events) == expected
    assert not FIRST_TURN_ONLY & set(types(second_run.events))
    # only the new prompt becomes a user/message (no runtime-context repeat)
    [user] = [e for e in second_run.events if e["type"] == "user/message"]
    assert user["data"]["content"] == [{"type": "text", "text": "Second question"}]


def test_second_turn_numbers(harness):
    session = harness.start_session("session-turn-numbers")
    run_bounded(session, "one")
    second = run_bounded(session, "two")
    assert first(second.events, "turn/start")["data"] == {"turn": 2}
    assert first(second.events, "step/start")["data"] == {"turn": 2, "step": 1}
    assistant = first(second.events, "assistant/message")
    assert (assistant["data"]["turn"], assistant["data"]["step"]) == (2, 1)
    assert text_of(assistant["data"]["message"]) == "two"
    assert second.events[-1]["data"] == {"turn": 2, "reason": {"kind": "completed"}}
    # the receipt of turn 2 again starts the empty next-turn queue
    assert second.events[0]["data"]["start"] == 0
    assert second.events[2]["data"] == {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}


def test_two_sessions_have_independent_seqs(harness):
    a = run_bounded(harness.start_session("session-a"), "alpha")
    b = run_bounded(harness.start_session("session-b"), "beta")
    assert a.events[0]["seq"] == 3 and b.events[0]["seq"] == 3
    assert (a.final_response, b.final_response) == ("alpha", "beta")
