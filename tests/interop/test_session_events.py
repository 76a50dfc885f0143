"""`session/events` (dsh's extension, issue 28): pages of a session's stored
events after a seq, for a session open in this process and for one only on
disk (written by dsh or by the official runtime), equal to what was
notified and what the log holds."""

from __future__ import annotations

import time

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT, session_events
from test_sessions import KEY, log_file, official, read_log  # noqa: F401 - official is a fixture

SID = "session-events"


def page(raw, session=SID, **params) -> dict:
    return raw.result("session/events", {"sessionId": session, **params})


def all_pages(raw, session=SID, limit=None) -> list[dict]:
    events, after = [], None
    while True:
        params = {"limit": limit} if limit else {}
        if after is not None:
            params["afterSeq"] = after
        got = page(raw, session, **params)
        events += got["events"]
        if not got["more"]:
            return events
        after = got["events"][-1]["seq"]


def test_the_events_of_a_finished_turn_equal_the_notified_ones_in_any_page_size(make_raw, workspace, scenario):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([
        {"blocks": [{"tool_call": {"id": "t1", "name": "bash", "arguments": {"description": "d", "command": "echo hi"}}}]},
        {"text": "done"}]))
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    notified = session_events(raw.frames, SID)
    whole = page(raw)
    assert whole["events"] == notified
    assert (whole["more"], whole["lastSeq"]) == (False, notified[-1]["seq"])
    assert all_pages(raw, limit=3) == notified
    tail = page(raw, afterSeq=notified[-3]["seq"])
    assert tail["events"] == notified[-2:]
    assert page(raw, afterSeq=notified[-1]["seq"]) == {"events": [], "more": False, "lastSeq": notified[-1]["seq"]}


def test_a_client_catching_up_mid_turn_misses_nothing_and_sees_nothing_twice(make_raw, workspace, scenario):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "slow", "delay_ms": 600}]))
    raw.prompt(SID, "go")
    raw.wait_for(lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == "step/start")
    start = len(raw.frames)
    caught = page(raw)
    raw.status(SID, "idle")
    # The page, then the notifications after its lastSeq: the whole log,
    # once each.
    later = [e for e in session_events(raw.frames[start:], SID) if e["seq"] > caught["lastSeq"]]
    merged = caught["events"] + later
    assert [e["seq"] for e in merged] == list(range(len(merged)))
    assert merged == session_events(raw.frames, SID)
    assert merged[-1]["type"] == "turn/end"


def test_a_stored_session_is_read_without_being_opened(make_raw, workspace, scenario, dsh_home):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "one"}]))
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    notified = session_events(raw.frames, SID)
    assert raw.shutdown() == 0
    again = make_raw()
    again.initialize(workspace)
    assert all_pages(again) == notified == read_log(log_file(dsh_home, SID))[1:]
    # Reading did not open it: it resumes normally.
    again.result("session/resume", {"sessionId": SID})


def test_a_log_the_official_runtime_wrote_is_read_the_same_way(official, make_raw, fake_model, dsh_home, workspace, home):  # noqa: F811
    home.mkdir(exist_ok=True)
    server = fake_model([{"text": "Official answer."}])
    with DeepSeekHarness(dsh_bin=str(official), dsh_home=str(dsh_home), cwd=str(workspace), base_url=server.base_url,
                         api_key=KEY, request_timeout_seconds=FRAME_TIMEOUT, env={"HOME": str(home)}) as h:
        result = h.start_session("s-official").run("Hello")
    raw = make_raw()
    raw.initialize(workspace)
    events = all_pages(raw, "s-official", limit=5)
    assert events == read_log(log_file(dsh_home, "s-official"))[1:]
    # The run's notifications are the log's last events, as read.
    assert events[-len(result.events):] == result.events


def test_bad_params_and_unknown_sessions_are_refused(make_raw, workspace):
    raw = make_raw()
    raw.initialize(workspace)
    for params, message in [
        ({"sessionId": ""}, "session/events requires a non-empty sessionId string"),
        ({"sessionId": "s", "afterSeq": -1}, "session/events afterSeq must be a non-negative safe integer"),
        ({"sessionId": "s", "limit": 0}, "session/events limit must be an integer from 1 to 10000"),
        ({"sessionId": "s", "limit": 10001}, "session/events limit must be an integer from 1 to 10000"),
        ({"sessionId": "nobody"}, 'session "nobody" not found'),
    ]:
        assert raw.error("session/events", params)["message"] == message


def test_a_client_killed_mid_turn_catches_up_from_a_new_runtime(make_raw, workspace, scenario, dsh_home):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([
        {"blocks": [{"tool_call": {"id": "t1", "name": "bash",
                                   "arguments": {"description": "d", "command": "sleep 30"}}}]},
        {"text": "never"}]))
    raw.prompt(SID, "go")
    raw.wait_for(lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == "tool/call")
    # The client dies: it reads nothing more and its end of the channel closes.
    raw.pause_reading()
    seen = session_events(raw.frames, SID)
    raw.proc.stdin.close()
    assert raw.proc.wait(timeout=30) == 0
    # A new runtime serves the client that comes back.
    again = make_raw()
    again.initialize(workspace)
    rest = all_pages(again, SID)
    rest = [e for e in rest if e["seq"] > seen[-1]["seq"]]
    merged = seen + rest
    assert [e["seq"] for e in merged] == list(range(len(merged)))
    assert merged == read_log(log_file(dsh_home, SID))[1:]
    assert merged[-1]["type"] == "turn/end"
    assert merged[-1]["data"]["reason"]["kind"] == "aborted"
    # And the session goes on.
    again.result("session/resume", {"sessionId": SID})
    again.prompt(SID, "again")
    again.status(SID, "idle")
