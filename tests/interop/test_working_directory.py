"""session/working-directory/get|set (compare transcripts: working_directory)."""

from __future__ import annotations

import pytest
from deepseek_harness.errors import JsonRpcError

from interop_support import POLICY_EVENT_TYPES, run_bounded, text_of, types

SID = "session-cwd"


@pytest.fixture
def layout(workspace, base_dir):
    (workspace / "sub" / "deeper").mkdir(parents=True)
    outside = base_dir / "outside"
    outside.mkdir()
    return workspace, outside


class Recorder:
    """Collects the session's notifications that arrived before each SDK call returned."""

    def __init__(self, harness, session_id):
        self.subscription = harness.client.subscribe_session_notifications(session_id)

    def take(self):
        got = []
        self.subscription.drain(got.append)
        return [n.payload["event"] for n in got if n.method == "session.event"]


def assert_change(events, old, new, start, seq):
    """working-directory/change then a next-step notice naming both directories."""
    assert types(events) == ["working-directory/change", "agent/inbox/spliced"], events
    change, notice = events
    assert change["seq"] == seq and notice["seq"] == seq + 1
    assert change["data"] == {"cwd": new}
    data = notice["data"]
    assert data["target"] == "next-step"
    assert data["start"] == start
    assert "removedCount" not in data
    [message] = data["inserted"]
    assert message["role"] == "user"
    assert message["source"] == {"kind": "working-directory"}
    assert isinstance(message["id"], str) and message["id"]
    [block] = message["content"]
    assert block["type"] == "text"
    assert old in block["text"] and new in block["text"], block["text"]
    return message


def test_get_set_sequence_and_following_turn(harness, layout):
    workspace, outside = layout
    ws, sub, deeper, out = str(workspace), str(workspace / "sub"), str(workspace / "sub" / "deeper"), str(outside)
    session = harness.start_session(SID)
    rec = Recorder(harness, SID)

    # get on a new session creates it: policy events, and the initialize cwd
    assert session.get_working_directory() == ws
    created = rec.take()
    assert types(created) == POLICY_EVENT_TYPES
    assert [e["seq"] for e in created] == [0, 1, 2]

    notices = []
    assert session.set_working_directory("sub") == sub  # relative
    notices.append(assert_change(rec.take(), ws, sub, start=0, seq=3))
    assert session.get_working_directory() == sub
    assert rec.take() == []

    assert session.set_working_directory("deeper") == deeper  # relative to the current directory
    notices.append(assert_change(rec.take(), sub, deeper, start=1, seq=5))

    assert session.set_working_directory(ws) == ws  # absolute
    notices.append(assert_change(rec.take(), deeper, ws, start=2, seq=7))

    with pytest.raises(JsonRpcError) as missing:
        session.set_working_directory("does-not-exist")
    assert missing.value.code == -32603
    assert missing.value.message == 'working-directory: directory does not exist: "does-not-exist"'
    assert rec.take() == []

    assert session.set_working_directory(out) == out  # outside the workspace is allowed
    notices.append(assert_change(rec.take(), ws, out, start=3, seq=9))
    assert session.get_working_directory() == out

    with pytest.raises(JsonRpcError) as relative_missing:
        session.set_working_directory("sub")  # resolves against outside/, where it does not exist
    assert relative_missing.value.message == 'working-directory: directory does not exist: "sub"'
    assert rec.take() == []

    # the next turn claims the notices first, then the prompt
    result = run_bounded(session, "Where am I?")
    events = result.events
    assert result.finish_reason == "completed"
    assert types(events)[:5] == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "agent/inbox/spliced", "step/start"]
    assert events[0]["seq"] == 11
    assert events[0]["data"]["target"] == "next-turn"
    assert events[2]["data"] == {"target": "next-step", "start": 0, "removedCount": 4, "inserted": []}
    assert events[3]["data"] == {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": []}

    users = [e for e in events if e["type"] == "user/message"]
    assert [u["data"] for u in users[:4]] == notices
    assert users[4]["data"]["content"] == [{"type": "text", "text": "Where am I?"}]
    assert users[4]["data"]["id"] == events[0]["data"]["inserted"][0]["id"]
    context = users[5]["data"]
    assert context["source"]["kind"] == "runtime-context"
    assert len(users) == 6
    sections = {s["name"]: s["text"] for s in context["source"]["sections"]}
    assert out in sections["working-directory:current"]
    # notices come after system/message and before the prompt
    assert types(events)[5:12] == ["system/message"] + ["user/message"] * 6


def test_get_on_unknown_session_creates_it(harness, workspace):
    rec = Recorder(harness, "session-cwd-fresh")
    assert harness.start_session("session-cwd-fresh").get_working_directory() == str(workspace)
    events = rec.take()
    assert types(events) == POLICY_EVENT_TYPES
    assert [e["data"] for e in events] == [
        {"preset": "workspace-write"},
        {"mode": "workspace-write"},
        {"policy": "ask"},
    ]


def test_set_on_unknown_session_creates_it_then_changes(harness, layout):
    workspace, _ = layout
    rec = Recorder(harness, "session-cwd-set-first")
    session = harness.start_session("session-cwd-set-first")
    assert session.set_working_directory("sub") == str(workspace / "sub")
    events = rec.take()
    assert types(events) == POLICY_EVENT_TYPES + ["working-directory/change", "agent/inbox/spliced"]


def test_set_to_current_directory_changes_nothing(harness, layout):
    workspace, _ = layout
    session = harness.start_session("session-cwd-same")
    rec = Recorder(harness, "session-cwd-same")
    session.get_working_directory()
    rec.take()
    assert session.set_working_directory(".") == str(workspace)
    assert session.set_working_directory(str(workspace)) == str(workspace)
    assert rec.take() == []


def test_set_returns_canonical_path(harness, layout):
    workspace, _ = layout
    session = harness.start_session("session-cwd-canonical")
    assert session.set_working_directory("sub/deeper/..") == str(workspace / "sub")
    assert session.set_working_directory("./deeper/") == str(workspace / "sub" / "deeper")


def test_set_to_a_file_is_refused(harness, workspace):
    (workspace / "file.txt").write_text("x")
    session = harness.start_session("session-cwd-file")
    with pytest.raises(JsonRpcError) as error:
        session.set_working_directory("file.txt")
    assert error.value.message == 'working-directory: directory does not exist: "file.txt"'


def test_notice_and_turn_in_sdk_session_stay_consistent(harness, layout):
    """Two changes, then a turn: the echo reply is the prompt; history order is stable."""
    workspace, outside = layout
    session = harness.start_session("session-cwd-turn")
    session.set_working_directory("sub")
    session.set_working_directory(str(outside))
    result = run_bounded(session, "hi")
    assert result.final_response == "hi"
    claim = [e for e in result.events if e["type"] == "agent/inbox/spliced"][1]
    assert claim["data"]["removedCount"] == 2
    second = run_bounded(session, "again")
    # no notices pending: only the next-turn claim in turn 2
    splices = [e["data"]["target"] for e in second.events if e["type"] == "agent/inbox/spliced"]
    assert splices == ["next-turn", "next-turn"]
    assert text_of(second.events[-3]["data"]["message"]) == "again"


# -- request validation (raw client) ----------------------------------------


def test_missing_session_id(raw_echo):
    for params in ({}, {"sessionId": ""}, {"sessionId": 5}):
        assert raw_echo.error("session/working-directory/get", params)["message"] == (
            "working-directory requests require a non-empty sessionId"
        )
    assert raw_echo.error("session/working-directory/set", {"path": "sub"})["message"] == (
        "working-directory requests require a non-empty sessionId"
    )


def test_set_requires_a_path_string(raw_echo):
    for params in ({"sessionId": "s-wd"}, {"sessionId": "s-wd", "path": 5}):
        assert raw_echo.error("session/working-directory/set", params)["message"] == (
            "working-directory set requires a path string"
        )


def test_set_empty_path(raw_echo):
    error = raw_echo.error("session/working-directory/set", {"sessionId": "s-wd", "path": ""})
    assert error["message"] == "working-directory: cd must not be empty"
