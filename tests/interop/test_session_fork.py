"""`session/fork` (dsh's extension, issue 28): a new root session holding a
stored session's events through a completed turn, which resumes in dsh and
in the official runtime; the source is never changed."""

from __future__ import annotations

import hashlib

import pytest
from deepseek_harness.errors import JsonRpcError
from pydantic import BaseModel, ConfigDict

from interop_support import FRAME_TIMEOUT, first, session_events, write_scenario
from test_sessions import http_harness, log_file, official, read_log  # noqa: F401 - official is a fixture


class Reply(BaseModel):
    """Any result object, kept whole."""

    model_config = ConfigDict(extra="allow")


def fork(client, **params) -> dict:
    """`session/fork` through the official SDK's client."""
    return client.request("session/fork", params, response_model=Reply, timeout_seconds=FRAME_TIMEOUT).model_dump()


def turn_ends(events: list[dict]) -> list[int]:
    return [e["seq"] for e in events if e["type"] == "turn/end"]


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def conversation(request: dict, said: list[str]) -> list[tuple[str, str]]:
    """(role, text) of the messages of a recorded model request whose first
    text block is one of ``said`` (the runtime's own context blocks left
    out)."""
    out = []
    for message in request["body"]["messages"]:
        content = message["content"]
        text = content if isinstance(content, str) else next((b["text"] for b in content if "text" in b), "")
        if text in said:
            out.append((message["role"], text))
    return out


def test_a_fork_holds_the_events_through_the_turn_boundary_and_the_source_is_unchanged(make_harness, dsh_home,
                                                                                       workspace):
    harness = make_harness()
    harness.start()
    source = harness.start_session("src")
    for prompt in ["One", "Two", "Three"]:
        source.run(prompt)
    path = log_file(dsh_home, "src")
    before = sha(path)
    events = read_log(path)[1:]
    ends = turn_ends(events)
    assert len(ends) == 3
    # A seq inside the third turn: the fork ends with the second turn.
    forked = fork(harness.client, sessionId="src", atSeq=ends[1] + 3, newSessionId="fk")
    assert forked == {"sessionId": "fk", "forkedFromSeq": ends[1], "turns": 2}
    assert sha(path) == before
    header, *copied = read_log(log_file(dsh_home, "fk"))
    assert header["id"] == "fk" and header["isSeeded"] is True and header["delegationDepth"] == 0
    assert header["cwd"] == str(workspace)
    assert "origin" not in header and "parentSession" not in header
    boundary = ends[1]
    assert copied[:boundary + 1] == events[:boundary + 1]
    seam, record = copied[boundary + 1:]
    assert (seam["type"], seam["seq"], seam["data"]) == ("session/end-seed", boundary + 1, {"inherited": True})
    assert (record["type"], record["seq"], record.get("ignorable")) == ("dsh/session-forked", boundary + 2, True)
    assert record["data"] == {"sourceSessionId": "src", "sourceSeq": boundary}
    # At a turn's end exactly; by default the last completed turn.
    assert fork(harness.client, sessionId="src", atSeq=ends[0])["forkedFromSeq"] == ends[0]
    latest = fork(harness.client, sessionId="src")
    assert (latest["forkedFromSeq"], latest["turns"]) == (ends[2], 3)
    assert len(latest["sessionId"]) == 36  # a new UUID
    assert sha(path) == before


def test_the_fork_and_its_source_resume_in_dsh_and_go_on_apart(fake_model, dsh_bin, dsh_home, workspace, home):
    home.mkdir(exist_ok=True)
    server = fake_model([{"text": f"Answer {i}."} for i in range(1, 7)])
    with http_harness(dsh_bin, server, dsh_home, workspace, home) as h:
        source = h.start_session("src")
        source.run("Question 1")
        source.run("Question 2")
        boundary = turn_ends(read_log(log_file(dsh_home, "src"))[1:])[0]
        assert fork(h.client, sessionId="src", atSeq=boundary, newSessionId="fk")["turns"] == 1
        # The source is open in this runtime; the fork is stored, closed.
        result = h.resume_session("fk").run("Question 3 (fork)")
        assert result.final_response == "Answer 3."
        assert first(result.events, "turn/start")["data"]["turn"] == 2
        assert first(result.events, "turn/start")["seq"] > boundary + 2
        said = ["Question 1", "Answer 1.", "Question 2", "Answer 2.", "Question 3 (fork)", "Answer 3.",
                "Question 4 (source)"]
        assert conversation(server.requests()[-1], said) == [
            ("user", "Question 1"), ("assistant", "Answer 1."), ("user", "Question 3 (fork)")]
        again = source.run("Question 4 (source)")
        assert again.final_response == "Answer 4."
        assert conversation(server.requests()[-1], said) == [
            ("user", "Question 1"), ("assistant", "Answer 1."), ("user", "Question 2"), ("assistant", "Answer 2."),
            ("user", "Question 4 (source)")]
    # Both resume in a new runtime.
    with http_harness(dsh_bin, server, dsh_home, workspace, home) as h:
        assert h.resume_session("fk").run("Question 5").final_response == "Answer 5."
        assert h.resume_session("src").run("Question 6").final_response == "Answer 6."
    fork_log = read_log(log_file(dsh_home, "fk"))[1:]
    assert [e["seq"] for e in fork_log] == list(range(len(fork_log)))


@pytest.mark.parametrize("writer", ["dsh", "official"])
def test_the_fork_resumes_in_the_official_runtime(writer, official, fake_model, dsh_bin, make_raw, dsh_home,  # noqa: F811
                                                  workspace, home):
    home.mkdir(exist_ok=True)
    server = fake_model([{"text": "First answer."}, {"text": "Second answer."}, {"text": "Fork answer."},
                         {"text": "Later answer."}])
    with http_harness(dsh_bin if writer == "dsh" else official, server, dsh_home, workspace, home) as h:
        source = h.start_session("src")
        source.run("First question")
        source.run("Second question")
    path = log_file(dsh_home, "src")
    before = sha(path)
    boundary = turn_ends(read_log(path)[1:])[0]
    raw = make_raw()
    raw.initialize(workspace)
    assert raw.result("session/fork", {"sessionId": "src", "atSeq": boundary + 1, "newSessionId": "fk"}) == {
        "sessionId": "fk", "forkedFromSeq": boundary, "turns": 1}
    assert raw.shutdown() == 0
    assert sha(path) == before
    copied = read_log(log_file(dsh_home, "fk"))[1:boundary + 2]
    # The official runtime's delivery markers name the fork.
    markers = [e for e in copied if e["type"] == "session-log-deepseek/delivery-accepted"]
    assert (len(markers) > 0) == (writer == "official")
    assert all(m["data"]["sessionId"] == "fk" for m in markers)
    with http_harness(official, server, dsh_home, workspace, home) as h:
        result = h.resume_session("fk").run("Fork question")
    assert (result.final_response, result.finish_reason) == ("Fork answer.", "completed")
    assert first(result.events, "turn/start")["data"]["turn"] == 2
    said = ["First question", "First answer.", "Second question", "Second answer.", "Fork question"]
    assert conversation(server.requests()[-1], said) == [
        ("user", "First question"), ("assistant", "First answer."), ("user", "Fork question")]
    # And back in dsh after the official runtime wrote to it.
    with http_harness(dsh_bin, server, dsh_home, workspace, home) as h:
        assert h.resume_session("fk").run("Later question").final_response == "Later answer."
    events = read_log(log_file(dsh_home, "fk"))[1:]
    assert [e["seq"] for e in events] == list(range(len(events)))


def test_a_live_session_is_forked_at_its_last_completed_turn(make_raw, workspace, scenario, dsh_home):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "quick"}, {"text": "slow", "delay_ms": 800}]))
    raw.prompt("live", "First")
    raw.status("live", "idle")
    start = len(raw.frames)
    raw.prompt("live", "Second")
    raw.wait_for(lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == "step/start",
                 start=start)
    forked = raw.result("session/fork", {"sessionId": "live", "newSessionId": "snap"})
    raw.status("live", "idle", start=start)
    events = session_events(raw.frames, "live")
    assert forked == {"sessionId": "snap", "forkedFromSeq": turn_ends(events)[0], "turns": 1}
    assert len(turn_ends(events)) == 2  # the source went on undisturbed
    copied = read_log(log_file(dsh_home, "snap"))[1:]
    assert copied[:forked["forkedFromSeq"] + 1] == events[:forked["forkedFromSeq"] + 1]
    assert read_log(log_file(dsh_home, "live"))[1:] == events
    listed = {s["sessionId"]: s for s in raw.result("session/list", {})["sessions"]}
    assert listed["snap"]["forkedFrom"] == {"sessionId": "live", "seq": forked["forkedFromSeq"]}
    assert (listed["snap"]["status"], listed["snap"]["turns"], listed["snap"]["title"]) == ("idle", 1, "First")
    raw.result("session/resume", {"sessionId": "snap"})
    raw.prompt("snap", "Third")
    raw.status("snap", "idle")


def test_refusals(make_raw, workspace, scenario, base_dir, dsh_home):
    raw = make_raw()
    assert raw.error("session/fork", {"sessionId": "s"})["message"] == "SDK server is not initialized"
    tree = write_scenario(base_dir, [
        {"text": "plain"},
        {"blocks": [{"tool_call": {"id": "c1", "name": "subagent",
                                   "arguments": {"description": "Greet", "prompt": "TASK-A: reply"}}}]},
        {"text": "Delegated."}, {"text": "Parent saw it."}],
        name="tree.json", agents=[{"when": "TASK-A", "replies": [{"text": "CHILD-OK"}]}])
    raw.initialize(workspace, model=tree)
    raw.prompt("src", "Plain turn")
    raw.status("src", "idle")
    raw.prompt("src", "Delegate")
    raw.result("session/wait", {"sessionId": "src"})
    ends = turn_ends(session_events(raw.frames, "src"))
    for params, message in [
        ({}, "session/fork requires a non-empty sessionId string"),
        ({"sessionId": ""}, "session/fork requires a non-empty sessionId string"),
        ({"sessionId": "src", "atSeq": -1}, "session/fork atSeq must be a non-negative safe integer"),
        ({"sessionId": "src", "atSeq": "3"}, "session/fork atSeq must be a non-negative safe integer"),
        ({"sessionId": "src", "newSessionId": ""}, "session/fork newSessionId must be a non-empty string"),
        ({"sessionId": "nobody"}, 'session "nobody" not found'),
        ({"sessionId": "src", "atSeq": 2}, 'session "src" has no completed turn ending at or before seq 2'),
        ({"sessionId": "src", "atSeq": ends[0], "newSessionId": "src"}, 'session "src" already exists'),
    ]:
        assert raw.error("session/fork", params)["message"] == message
    catalog = first(session_events(raw.frames, "src"), "subagent/catalog")["seq"]
    assert raw.error("session/fork", {"sessionId": "src"})["message"] == (
        f'session "src" started a subagent at seq {catalog}, before the fork point; a session tree cannot be '
        "forked (fork at an earlier turn)")
    child = next(s["sessionId"] for s in raw.result("session/list", {})["sessions"]
                 if s.get("parentSessionId") == "src")
    assert raw.error("session/fork", {"sessionId": child})["message"] == (
        f'session "{child}" is a subagent of "src"; only root sessions can be forked')
    # Before the subagent: allowed.
    assert raw.result("session/fork", {"sessionId": "src", "atSeq": ends[0], "newSessionId": "early"})["turns"] == 1
    # A session whose first turn is still running (in another runtime) has
    # nothing to fork.
    slow = make_raw()
    slow.initialize(workspace, model=scenario([{"text": "slow", "delay_ms": 1500}]))
    slow.prompt("fresh", "Slow first turn")
    slow.wait_for(lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == "step/start")
    assert raw.error("session/fork", {"sessionId": "fresh"})["message"] == (
        'session "fresh" has no completed turn to fork')
    # Nothing was left behind by the refusals.
    names = {p.name for p in (dsh_home / "sessions").glob("--*--/*")}
    assert names == {"src", child, "early", "fresh"}


def test_the_sdk_client_reports_a_refusal(make_harness):
    harness = make_harness()
    harness.start()
    with pytest.raises(JsonRpcError) as refused:
        fork(harness.client, sessionId="nobody")
    assert refused.value.message == 'session "nobody" not found'
