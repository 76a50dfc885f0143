"""`session/list` (dsh's extension, issue 28): the sessions stored in
DSH_HOME, newest activity first, a page at a time, filtered by workspace or
text, each `running` while a runtime has it open; logs written by dsh and by
the official runtime alike, read through their summary sidecars."""

from __future__ import annotations

import json
import stat

import pytest
from deepseek_harness import DeepSeekHarness
from deepseek_harness.errors import JsonRpcError
from pydantic import BaseModel, ConfigDict

from interop_support import FRAME_TIMEOUT, write_scenario
from test_sessions import KEY, log_file, official, read_log  # noqa: F401 - official is a fixture


class Reply(BaseModel):
    """Any result object, kept whole."""

    model_config = ConfigDict(extra="allow")


def listing(client, **params) -> dict:
    """One `session/list` page through the official SDK's client."""
    return client.request("session/list", params, response_model=Reply, timeout_seconds=FRAME_TIMEOUT).model_dump()


def every_page(client, limit: int, **params) -> list[list[dict]]:
    pages, cursor = [], None
    while True:
        got = listing(client, limit=limit, **params, **({"cursor": cursor} if cursor else {}))
        pages.append(got["sessions"])
        cursor = got.get("nextCursor")
        if cursor is None:
            return pages


def ids(sessions: list[dict]) -> list[str]:
    return [s["sessionId"] for s in sessions]


def position(session: dict) -> tuple:
    return (-session["updatedAt"], session["sessionId"])


def test_sessions_come_newest_first_and_pages_cover_each_exactly_once(make_harness, workspace):
    harness = make_harness()
    harness.start()
    names = [f"s{i}" for i in range(7)]
    for name in names:
        harness.start_session(name).run(f"Task number {name}")
    harness.start_session("s2").run("Again")  # s2 is the most recent now
    whole = listing(harness.client)["sessions"]
    assert sorted(ids(whole)) == names
    assert whole == sorted(whole, key=position)
    assert whole[0]["sessionId"] == "s2"
    for session in whole:
        name = session["sessionId"]
        assert session["title"] == f"Task number {name}"
        assert session["cwd"] == str(workspace)
        assert session["turns"] == (2 if name == "s2" else 1)
        assert session["status"] == "running"  # open in this runtime
        assert session["createdAt"] <= session["updatedAt"]
        assert "parentSessionId" not in session and "forkedFrom" not in session
    pages = every_page(harness.client, 3)
    assert [len(p) for p in pages] == [3, 3, 1]
    assert [s for page in pages for s in page] == whole
    assert listing(harness.client, limit=7).get("nextCursor") is None


def test_another_runtime_sees_them_running_until_they_close(make_harness, dsh_bin, dsh_home, workspace):
    first = make_harness()
    first.start()
    first.start_session("held").run("Hello")
    with DeepSeekHarness(dsh_bin=str(dsh_bin), dsh_home=str(dsh_home), cwd=str(workspace), provider="scripted",
                         model="echo", request_timeout_seconds=FRAME_TIMEOUT) as second:
        second.start()
        [seen] = listing(second.client)["sessions"]
        assert (seen["sessionId"], seen["status"], seen["turns"]) == ("held", "running", 1)
        first.close()
        [seen] = listing(second.client)["sessions"]
        assert seen["status"] == "idle"


def test_cwd_and_query_filter_the_listing(make_harness, base_dir, workspace):
    other = base_dir / "other-ws"
    other.mkdir()
    here, there = make_harness(), make_harness(cwd=str(other))
    here.start()
    there.start()
    here.start_session("alpha-1").run("Refactor the PARSER")
    here.start_session("beta-2").run("Write docs")
    there.start_session("gamma-3").run("Parser tests")
    assert ids(listing(here.client, cwd=str(other))["sessions"]) == ["gamma-3"]
    assert sorted(ids(listing(here.client, cwd=str(workspace))["sessions"])) == ["alpha-1", "beta-2"]
    assert listing(here.client, cwd=str(base_dir / "nowhere"))["sessions"] == []
    # Case-insensitive, on the title or the id.
    assert sorted(ids(listing(here.client, query="parser")["sessions"])) == ["alpha-1", "gamma-3"]
    assert ids(listing(here.client, query="BETA")["sessions"]) == ["beta-2"]
    assert ids(listing(there.client, query="parser", cwd=str(workspace))["sessions"]) == ["alpha-1"]
    assert listing(here.client, query="no such text")["sessions"] == []
    # A filtered listing pages like any other.
    pages = every_page(here.client, 1, query="a")
    assert sorted(ids([s for page in pages for s in page])) == ["alpha-1", "beta-2", "gamma-3"]


def test_a_session_mid_turn_is_running_for_this_and_other_runtimes(make_raw, workspace, scenario):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "slow", "delay_ms": 800}]))
    raw.prompt("busy", "Work slowly")
    raw.wait_for(lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == "step/start")
    [mid] = raw.result("session/list", {})["sessions"]
    assert (mid["sessionId"], mid["status"], mid["turns"]) == ("busy", "running", 1)
    watcher = make_raw()
    watcher.initialize(workspace)
    [seen] = watcher.result("session/list", {})["sessions"]
    assert (seen["sessionId"], seen["status"]) == ("busy", "running")
    raw.status("busy", "idle")
    assert raw.shutdown() == 0
    [after] = watcher.result("session/list", {})["sessions"]
    assert after["status"] == "idle" and after["updatedAt"] >= seen["updatedAt"]
    assert after["title"] == "Work slowly"


def test_subagent_children_are_listed_with_their_parent(make_raw, workspace, base_dir):
    model = write_scenario(base_dir, [
        {"blocks": [{"tool_call": {"id": "c1", "name": "subagent",
                                   "arguments": {"description": "Greet", "prompt": "TASK-A: reply"}}}]},
        {"text": "Delegated."}, {"text": "Parent saw it."}],
        agents=[{"when": "TASK-A", "replies": [{"text": "CHILD-OK"}]}])
    raw = make_raw()
    raw.initialize(workspace, model=model)
    raw.prompt("parent", "Delegate")
    raw.result("session/wait", {"sessionId": "parent"})
    sessions = raw.result("session/list", {})["sessions"]
    [parent] = [s for s in sessions if s["sessionId"] == "parent"]
    [child] = [s for s in sessions if s["sessionId"] != "parent"]
    assert "parentSessionId" not in parent
    assert child["parentSessionId"] == "parent" and child["cwd"] == str(workspace)
    assert child["turns"] == 1 and child["status"] == "running"


def test_logs_the_official_runtime_wrote_are_listed_and_followed(official, fake_model, make_raw, dsh_home,  # noqa: F811
                                                                 workspace, home):
    home.mkdir(exist_ok=True)
    server = fake_model([{"text": "One."}, {"text": "Two."}, {"text": "Three."}, {"text": "Four."}])

    def official_harness() -> DeepSeekHarness:
        return DeepSeekHarness(dsh_bin=str(official), dsh_home=str(dsh_home), cwd=str(workspace),
                               base_url=server.base_url, api_key=KEY, request_timeout_seconds=FRAME_TIMEOUT,
                               env={"HOME": str(home)})

    raw = make_raw()
    raw.initialize(workspace)
    with official_harness() as h:
        h.start_session("off-a").run("First official question")
        twice = h.start_session("off-b")
        twice.run("Second official question")
        twice.run("And a follow-up")
        # The official runtime holds the lock of the sessions it has open.
        assert {s["status"] for s in raw.result("session/list", {})["sessions"]} == {"running"}
    listed = {s["sessionId"]: s for s in raw.result("session/list", {})["sessions"]}
    assert set(listed) == {"off-a", "off-b"}
    events = read_log(log_file(dsh_home, "off-b"))
    assert listed["off-b"]["title"] == "Second official question"
    assert listed["off-b"]["turns"] == 2
    assert listed["off-b"]["updatedAt"] == events[-1]["time"]
    assert listed["off-b"]["createdAt"] == events[0]["createdAt"]
    assert listed["off-a"]["status"] == listed["off-b"]["status"] == "idle"
    # The summaries sit beside sessions/, which holds only project directories.
    assert all(p.is_dir() and p.name.startswith("--") for p in (dsh_home / "sessions").iterdir())
    sidecars = dsh_home / "session-summary"
    assert {"off-a", "off-b"} <= {p.name for p in sidecars.iterdir()}
    assert stat.S_IMODE((sidecars / "off-a").stat().st_mode) == 0o600
    # The official runtime goes on with the session (the sidecars do not
    # bother it); the listing follows the grown log.
    with official_harness() as h:
        h.resume_session("off-a").run("Another official question")
    listed = {s["sessionId"]: s for s in raw.result("session/list", {})["sessions"]}
    events = read_log(log_file(dsh_home, "off-a"))
    assert (listed["off-a"]["turns"], listed["off-a"]["updatedAt"]) == (2, events[-1]["time"])
    assert ids(raw.result("session/list", {})["sessions"])[0] == "off-a"
    assert json.loads((sidecars / "off-a").read_text())["summary"]["turns"] == 2


def test_corrupt_and_deleted_sessions_are_left_out(make_raw, workspace, dsh_home):
    raw = make_raw()
    raw.initialize(workspace)
    for name in ["keep", "corrupt", "deleted"]:
        raw.prompt(name, f"About {name}")
        raw.status(name, "idle")
    assert raw.shutdown() == 0
    log_file(dsh_home, "corrupt").write_bytes(b"this is not a session log")
    deleted = log_file(dsh_home, "deleted").parent
    for path in deleted.iterdir():
        path.unlink()
    deleted.rmdir()
    again = make_raw()
    again.initialize(workspace)
    assert ids(again.result("session/list", {})["sessions"]) == ["keep"]
    # The session left out can still be resumed and fails as before.
    assert again.error("session/resume", {"sessionId": "corrupt"})["message"].startswith("corrupt session log")


def test_bad_params_are_refused(make_raw, workspace):
    raw = make_raw()
    assert raw.error("session/list", {})["message"] == "SDK server is not initialized"
    raw.initialize(workspace)
    for params, message in [
        ({"cwd": 3}, "session/list cwd must be a string"),
        ({"query": ["x"]}, "session/list query must be a string"),
        ({"limit": 0}, "session/list limit must be an integer from 1 to 1000"),
        ({"limit": 1001}, "session/list limit must be an integer from 1 to 1000"),
        ({"limit": "5"}, "session/list limit must be an integer from 1 to 1000"),
        ({"cursor": "not-a-cursor"}, "session/list cursor must be the nextCursor of an earlier session/list page"),
        ({"cursor": 12}, "session/list cursor must be the nextCursor of an earlier session/list page"),
    ]:
        assert raw.error("session/list", params)["message"] == message
    assert raw.result("session/list", {"cwd": None, "cursor": None, "limit": None, "query": None}) == {"sessions": []}


def test_the_sdk_client_reports_a_refusal(make_harness):
    harness = make_harness()
    harness.start()
    with pytest.raises(JsonRpcError) as refused:
        listing(harness.client, limit=0)
    assert refused.value.message == "session/list limit must be an integer from 1 to 1000"
