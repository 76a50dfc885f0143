"""Profile sdk-minimal: no policy events; the receipt is seq 0."""

from __future__ import annotations

from interop_support import POLICY_EVENT_TYPES, run_bounded, seqs, session_events, types


def test_run_has_no_policy_events(make_harness):
    harness = make_harness(profile="sdk-minimal")
    seen = []
    session = harness.start_session("session-minimal")
    subscription = harness.client.subscribe_session_notifications("session-minimal")
    result = run_bounded(session, "Say hi")
    subscription.drain(seen.append)

    assert (result.final_response, result.finish_reason) == ("Say hi", "completed")
    all_events = [n.payload["event"] for n in seen if n.method == "session.event"]
    assert not set(POLICY_EVENT_TYPES) & set(types(all_events))
    assert all_events[0]["type"] == "agent/inbox/spliced" and all_events[0]["seq"] == 0
    assert result.events[0]["seq"] == 0
    assert seqs(result.events) == list(range(len(result.events)))
    assert types(result.events)[:4] == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start"]
    assert types(result.events)[-3:] == ["assistant/message", "step/end", "turn/end"]


def test_second_turn_in_sdk_minimal(make_harness):
    harness = make_harness(profile="sdk-minimal")
    session = harness.start_session("session-minimal-2")
    one = run_bounded(session, "one")
    two = run_bounded(session, "two")
    assert two.events[0]["seq"] == one.events[-1]["seq"] + 1
    assert two.final_response == "two"


def test_working_directory_get_creates_session_silently(make_harness, workspace):
    harness = make_harness(profile="sdk-minimal")
    harness.start()
    subscription = harness.client.subscribe_session_notifications("session-minimal-wd")
    assert harness.start_session("session-minimal-wd").get_working_directory() == str(workspace)
    seen = []
    subscription.drain(seen.append)
    assert seen == []


def test_raw_first_event_is_receipt_at_seq_zero(make_raw, workspace):
    raw = make_raw(profile="sdk-minimal")
    raw.initialize(workspace)
    start = len(raw.frames)
    raw.prompt("s-minimal", "hi")
    raw.status("s-minimal", "idle")
    events = session_events(raw.frames[start:], "s-minimal")
    assert events[0]["type"] == "agent/inbox/spliced"
    assert events[0]["seq"] == 0
    first_frame = raw.frames[start]
    assert first_frame["method"] == "session.event" and first_frame["params"]["event"]["seq"] == 0
