"""Goals and plan mode (sdk profile): `create_goal`, `get_goal`,
`update_goal`, the `goal/change` events, the automatic continuation rounds
and `exit_plan_mode`, driven through the official Python SDK, plus
differential runs against the official runtime.

A round that must stay open while the test acts runs `cat` on a FIFO in
the workspace (it cannot finish before the test writes to it) or waits for
a reply held back for a minute (the runtime is stopped meanwhile), so the
orderings below hold whatever the machine's speed.
"""

from __future__ import annotations

import copy
import json
import os
import re
import threading
import time
from pathlib import Path

import pytest
from deepseek_harness import DeepSeekHarness
from pydantic import BaseModel

from interop_support import FRAME_TIMEOUT, RUN_TIMEOUT, RawClient, clean_env, run_bounded, write_scenario
from test_differential import KEY, REMOVED, mask_usage, official_bin, scrub  # noqa: F401 - official_bin is a fixture
from test_sessions import log_file, read_log

SID = "s-goal"
G = "{{goal}}"
FULL_ACCESS = {"DSH_PERMISSION_MODE": "danger-full-access"}
GOAL_ID = re.compile(r"goal-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


class Empty(BaseModel):
    """An empty result (`session/wait`)."""


def call(name, arguments, call_id=None):
    tool_call = {"name": name, "arguments": arguments}
    if call_id:
        tool_call["id"] = call_id
    return {"blocks": [{"tool_call": tool_call}]}


def update(revision, action, **fields):
    return call("update_goal", {"goal_id": G, "revision": revision, "action": action, **fields})


WAIT_FOR_GATE = call("bash", {"description": "Wait for the test", "command": "cat gate.fifo"})


class Tree:
    """Every notification of one session tree, from before its first prompt."""

    def __init__(self, harness: DeepSeekHarness, sid: str = SID):
        harness.start()
        self.harness = harness
        self.sid = sid
        self.sub = harness.client.subscribe_session_notifications(sid)
        self.seen: list = []

    def drain(self):
        self.sub.drain(self.seen.append)

    def until(self, predicate, what: str):
        deadline = time.monotonic() + RUN_TIMEOUT
        while True:
            self.drain()
            if predicate():
                return
            if time.monotonic() > deadline:
                pytest.fail(f"no {what} within {RUN_TIMEOUT}s: {self.timeline()[-12:]}")
            time.sleep(0.02)  # polling interval only

    def events(self, sid: str | None = None) -> list[dict]:
        sid = sid or self.sid
        return [n.payload["event"] for n in self.seen
                if n.method == "session.event" and n.payload["sessionId"] == sid]

    def of(self, kind: str, sid: str | None = None) -> list[dict]:
        return [e for e in self.events(sid) if e["type"] == kind]

    def timeline(self) -> list[str]:
        """The root session's statuses and event types, in order."""
        out = []
        for n in self.seen:
            if n.payload.get("sessionId") != self.sid:
                continue
            if n.method == "session.status":
                out.append(f"status:{n.payload['status']}")
            elif n.method == "session.event":
                out.append(n.payload["event"]["type"])
        return out

    def until_event(self, kind: str, count: int = 1, sid: str | None = None, where=lambda data: True):
        self.until(lambda: len([e for e in self.of(kind, sid) if where(e["data"])]) >= count, f"{count}× {kind}")


def results(events) -> list[dict]:
    """Each tool result as {text, isError, error}."""
    out = []
    for e in events:
        if e["type"] == "tool/result":
            message = e["data"]["message"]
            out.append({"text": "".join(b.get("text", "") for b in message["content"]),
                        "isError": message["isError"], "error": e["data"].get("error")})
    return out


def view(text: str) -> dict:
    return json.loads(text)


def goal_inserts(events) -> list[dict]:
    return [m["source"] for e in events if e["type"] == "agent/inbox/spliced"
            for m in e["data"].get("inserted", []) if m["source"].get("kind") == "goal"]


class Gate:
    """A FIFO in the workspace that a round's `cat` blocks on."""

    def __init__(self, workspace: Path):
        self.path = workspace / "gate.fifo"
        os.mkfifo(self.path)

    def open(self):
        """Lets the blocked `cat` finish (blocks until it reads)."""
        def write():
            with open(self.path, "w") as fifo:
                fifo.write("go\n")
        thread = threading.Thread(target=write, daemon=True)
        thread.start()
        thread.join(FRAME_TIMEOUT)
        assert not thread.is_alive(), "nobody read the gate"


@pytest.fixture
def goal_harness(make_harness, base_dir):
    """goal_harness(replies, agents=()) -> a started sdk harness playing them."""
    def make(replies, agents=(), **options):
        model = write_scenario(base_dir, replies, agents=agents)
        options.setdefault("env", FULL_ACCESS)
        return make_harness(model=model, **options)
    return make


def refusal(text, code, name="GoalError"):
    return {"text": text, "isError": True, "error": {"name": name, "code": code}}


def test_every_goal_action_and_its_refusals(goal_harness):
    replies = [
        call("get_goal", {}),
        call("update_goal", {"goal_id": "goal-x", "revision": 1, "action": "pause"}),
        call("create_goal", {}),
        call("create_goal", {"objective": "  "}),
        call("create_goal", {"objective": "x", "max_goal_rounds": 1.5}),
        call("create_goal", {"objective": "x" * (16 * 1024 + 1)}),
        call("create_goal", {"objective": "  Ship it  ", "max_goal_rounds": 4}),
        call("create_goal", {"objective": "Second"}),
        update(7, "pause"),
        update(1, "resume"),
        update(1, "edit"),
        update(1, "edit", objective="Ship it well", max_goal_rounds=5),
        update(2, "pause", blocked_reason="x"),
        update(2, "blocked"),
        update(2, "blocked", blocked_reason="  need keys "),
        update(3, "resume"),
        update(4, "pause"),
        update(5, "resume"),
        call("get_goal", {}),
        update(5, "complete"),
        update(6, "complete"),
        call("create_goal", {"objective": "Next", "max_goal_rounds": 1}),
        update(1, "pause"),
        call("update_goal", {"goal_id": 5, "action": "nap"}),
        call("exit_plan_mode", {"plan": "1. do it"}),
        call("exit_plan_mode", {}),
        {"text": "done"},
        {"text": "still here"},
    ]
    tree = Tree(goal_harness(replies))
    session = tree.harness.start_session(SID)
    first = run_bounded(session, "Try every goal action")
    assert first.final_response == "done"
    out = results(first.events)
    changes = [e["data"] for e in first.events if e["type"] == "goal/change"]
    ids = sorted({c["goal"]["id"] for c in changes})
    assert len(ids) == 2 and all(GOAL_ID.fullmatch(i) for i in ids)
    one = changes[0]["goal"]["id"]
    two = next(i for i in ids if i != one)

    assert out[0] == {"text": '{"goal":null}', "isError": False, "error": None}
    assert out[1] == refusal("Error: no current goal", "GOAL_NOT_FOUND")
    assert out[2] == refusal('Error: invalid arguments: missing required property "objective"', "INVALID_ARGS", "ToolArgsError")
    assert out[3] == refusal("Error: goal objective must be a non-empty string", "GOAL_INVALID_OBJECTIVE")
    assert out[4] == refusal("Error: maxGoalRounds must be a positive safe integer", "GOAL_INVALID_MAX_ROUNDS")
    assert out[5]["error"]["code"] == "GOAL_INVALID_OBJECTIVE"  # this runtime's bound (16 KiB)
    assert out[6] == {"text": json.dumps({"goal": {"id": one, "revision": 1, "objective": "Ship it", "phase": "active",
                                                   "roundsStarted": 0, "maxGoalRounds": 4}, "activation": "armed"},
                                         separators=(",", ":")), "isError": False, "error": None}
    assert out[7] == refusal(f'Error: goal "{one}" already exists with phase "active"', "GOAL_ALREADY_EXISTS")
    assert out[8] == refusal(f'Error: stale goal ref "{one}" revision 7; current is "{one}" revision 1', "GOAL_STALE_REVISION")
    assert out[9] == refusal(f'Error: goal "{one}" is already active and armed', "GOAL_INVALID_TRANSITION")
    assert out[10] == refusal("Error: goal edit requires objective and/or maxGoalRounds", "GOAL_INVALID_EDIT")
    assert view(out[11]["text"])["goal"] == {"id": one, "revision": 2, "objective": "Ship it well", "phase": "active",
                                                  "roundsStarted": 0, "maxGoalRounds": 5}
    assert out[12] == refusal("Error: objective and max_goal_rounds are valid only with action edit; blocked_reason is valid only with action blocked",
                              "GOAL_TOOL_INVALID_UPDATE", "HarnessError")
    assert out[13] == refusal("Error: blocked_reason is required with action blocked", "GOAL_TOOL_INVALID_UPDATE", "HarnessError")
    blocked = view(out[14]["text"])
    assert blocked["goal"]["blockedReason"] == {"code": "model-reported", "message": "need keys"}
    assert (blocked["goal"]["phase"], blocked["activation"]) == ("blocked", "disarmed")
    assert view(out[15]["text"])["activation"] == "armed" and "blockedReason" not in view(out[15]["text"])["goal"]
    assert view(out[16]["text"])["goal"]["phase"] == "paused"
    assert out[17] == refusal("Error: the model cannot resume a paused goal; the user must resume it",
                              "GOAL_TOOL_RESUME_PAUSED", "HarnessError")
    assert view(out[18]["text"]) == {"goal": {"id": one, "revision": 5, "objective": "Ship it well", "phase": "paused",
                                              "roundsStarted": 0, "maxGoalRounds": 5}, "activation": "disarmed"}
    assert view(out[19]["text"])["goal"]["phase"] == "complete"
    assert out[20] == refusal(f'Error: cannot complete goal "{one}" from phase "complete"; expected active or paused or blocked',
                              "GOAL_INVALID_TRANSITION")
    assert view(out[21]["text"])["goal"] == {"id": two, "revision": 1, "objective": "Next", "phase": "active",
                                                  "roundsStarted": 0, "maxGoalRounds": 1}
    assert view(out[22]["text"])["goal"]["phase"] == "paused"
    assert out[23] == refusal('Error: invalid arguments: missing required property "revision"; "goal_id" must be a string; '
                              '"action" must be one of ["edit","pause","resume","complete","blocked"]', "INVALID_ARGS", "ToolArgsError")
    assert out[24] == {"text": "Error: exit_plan_mode is only available in plan mode", "isError": True, "error": None}
    assert out[25] == refusal('Error: invalid arguments: missing required property "plan"', "INVALID_ARGS", "ToolArgsError")

    assert [(c["operation"], c["goal"]["revision"], c["goal"]["phase"]) for c in changes] == [
        ("create", 1, "active"), ("edit", 2, "active"), ("block", 3, "blocked"), ("resume", 4, "active"),
        ("pause", 5, "paused"), ("complete", 6, "complete"), ("create", 1, "active"), ("pause", 2, "paused"),
    ]
    assert all(c["kind"] == "goal/change" and c["version"] == 1 and c["createdAt"] <= c["updatedAt"] for c in changes)
    # Each change is written just before its call's result.
    kinds = [e["type"] for e in first.events]
    for i, kind in enumerate(kinds):
        if kind == "goal/change":
            assert kinds[i + 1] == "tool/result"
    assert "plan/mode" not in kinds
    # A paused goal starts no round: the next prompt's turn follows its receipt.
    second = run_bounded(session, "Anything else?")
    assert goal_inserts(second.events) == []
    assert [e["type"] for e in second.events][:3] == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced"]


def test_rounds_run_to_the_limit_then_block(goal_harness):
    replies = [
        call("create_goal", {"objective": 'Make "the tests" pass', "max_goal_rounds": 3}),
        {"text": "t1"},
        call("get_goal", {}),
        {"text": "r1"},
        {"text": "r2"},
        {"text": "r3"},
        call("get_goal", {}),
        {"text": "it is blocked"},
    ]
    tree = Tree(goal_harness(replies))
    session = tree.harness.start_session(SID)
    first = run_bounded(session, "Start the goal")
    # Session.run returns at the first idle; the rounds follow on their own.
    assert first.final_response == "t1"
    assert [e["data"]["turn"] for e in first.events if e["type"] == "turn/end"] == [1]
    tree.until_event("goal/change", 2)
    goal = tree.of("goal/change")[0]["data"]["goal"]["id"]
    assert goal_inserts(tree.events()) == [
        {"kind": "goal", "goalId": goal, "revision": 1, "round": n} for n in (1, 2, 3)
    ]
    block = tree.of("goal/change")[1]["data"]
    assert (block["operation"], block["roundsStarted"], block["goal"]["revision"], block["goal"]["phase"]) == (
        "block", 3, 2, "blocked")
    assert block["goal"]["blockedReason"] == {"code": "round-limit", "message": "Goal reached its configured limit of 3 rounds."}
    # Between two rounds: idle, the round's message, running, its turn; the
    # round's request is announced again.
    timeline = tree.timeline()
    round_start = ["turn/end", "status:idle", "agent/inbox/spliced", "status:running", "turn/start",
                   "agent/inbox/spliced", "step/start", "user/message", "request/header"]
    starts = [i for i in range(len(timeline)) if timeline[i:i + len(round_start)] == round_start]
    assert len(starts) == 3, timeline
    assert timeline[-3:] == ["turn/end", "status:idle", "goal/change"]
    headers = [e["data"]["reason"] for e in tree.of("request/header")]
    assert headers == ["initial", "series", "series", "series"]
    rounds = [e["data"] for e in tree.of("user/message") if e["data"]["source"]["kind"] == "goal"]
    for n, message in enumerate(rounds, 1):
        text = message["content"][0]["text"]
        assert text.startswith(f'<goal_round>\nObjective: "Make \\"the tests\\" pass"\nRound: {n}/3\n\n'), text
        assert text.endswith("\n</goal_round>")
    # A round sees its own count.
    assert view(results(tree.events())[1]["text"])["goal"]["roundsStarted"] == 1
    # A user's turn after the limit: the goal is blocked and starts nothing.
    last = run_bounded(session, "Where are we?")
    assert view(results(last.events)[0]["text"]) == {
        "goal": {"id": goal, "revision": 2, "objective": 'Make "the tests" pass', "phase": "blocked", "roundsStarted": 3,
                 "maxGoalRounds": 3, "blockedReason": block["goal"]["blockedReason"]},
        "activation": "disarmed"}
    assert [e["type"] for e in last.events if e["type"] == "request/header"] == []


def test_session_wait_during_a_round_returns_at_its_end(make_raw, base_dir, workspace):
    gate = Gate(workspace)
    replies = [call("create_goal", {"objective": "Obj", "max_goal_rounds": 1}), {"text": "t1"},
               WAIT_FOR_GATE, {"text": "r1"}]
    raw = make_raw(env=clean_env(None, base_dir / "home", **FULL_ACCESS, DSH_HOME=str(base_dir / "dsh_home")))
    raw.initialize(workspace, model=write_scenario(base_dir, replies))
    raw.prompt(SID, "Start")

    def event(kind, where=lambda data: True):
        return lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == kind \
            and where(f["params"]["event"]["data"])

    raw.wait_for(event("tool/call", lambda d: d["name"] == "bash"), what="the round's call")
    wait = raw.send_request("session/wait", {"sessionId": SID})
    # A request answered after the wait's: the wait is under way.
    raw.result("session/working-directory/get", {"sessionId": SID})
    gate.open()
    at, response = raw.response_to(wait)
    assert response["result"] == {}
    # As on the official runtime, the wait ends with the round: after the
    # round's turn/end and idle, not while the round was held.
    round_end, _ = raw.wait_for(event("turn/end", lambda d: d["turn"] == 2), what="the round's end")
    idle = raw.status(SID, "idle", start=round_end)
    assert round_end < idle < at
    raw.wait_for(event("goal/change", lambda d: d["operation"] == "block"), what="the round limit")


def test_completing_the_goal_in_a_round_ends_the_rounds(goal_harness):
    replies = [
        call("create_goal", {"objective": "Ship", "max_goal_rounds": 5}),
        {"text": "t1"},
        update(1, "complete"),
        {"text": "All done: shipped."},
        {"text": "next answer"},
    ]
    tree = Tree(goal_harness(replies))
    session = tree.harness.start_session(SID)
    run_bounded(session, "Go")
    tree.until_event("goal/change", 2)
    tree.until_event("turn/end", 2)
    complete = tree.of("goal/change")[1]["data"]
    assert (complete["operation"], complete["roundsStarted"], complete["goal"]["phase"]) == ("complete", 1, "complete")
    # The round is told to close the run, on its next step.
    events = tree.events()
    notices = [(i, m) for i, e in enumerate(events) if e["type"] == "agent/inbox/spliced"
               for m in e["data"].get("inserted", []) if m["source"]["kind"] == "tool-goal"]
    assert len(notices) == 1
    at, notice = notices[0]
    assert notice["source"] == {"kind": "tool-goal", "form": "notice", "summary": "complete: Ship"}
    assert notice["content"][0]["text"].startswith('<goal_complete>\nObjective: "Ship"\n')
    assert events[at]["data"]["target"] == "next-step"
    assert [e["type"] for e in events[at - 1:at + 4]] == ["tool/result", "agent/inbox/spliced", "step/end",
                                                           "agent/inbox/spliced", "step/start"]
    # No round follows: the next prompt's turn comes right after its receipt.
    after = run_bounded(session, "Thanks")
    assert after.final_response == "next answer"
    assert len(goal_inserts(tree.events())) == 1


def test_a_round_may_only_complete_or_from_round_three_block(goal_harness):
    replies = [
        call("create_goal", {"objective": "Obj", "max_goal_rounds": 6}),
        {"text": "t1"},
        update(1, "edit", objective="other"),
        call("create_goal", {"objective": "another"}),
        update(1, "blocked", blocked_reason="stuck"),
        {"text": "r1"},
        {"text": "r2"},
        update(1, "blocked", blocked_reason="still stuck"),
        {"text": "I need the API key."},
    ]
    tree = Tree(goal_harness(replies))
    session = tree.harness.start_session(SID)
    run_bounded(session, "Go")
    tree.until_event("goal/change", 2)
    tree.until_event("turn/end", 4)
    out = results(tree.events())
    human = "Error: this goal operation requires a direct human turn on a top-level agent"
    assert out[1] == refusal(human, "GOAL_TOOL_AUTHORITY_REQUIRED", "HarnessError")
    assert out[2] == refusal(human, "GOAL_TOOL_AUTHORITY_REQUIRED", "HarnessError")
    assert out[3] == refusal("Error: blocked requires at least 3 consecutive goal rounds; current round is 1",
                             "GOAL_TOOL_BLOCK_THRESHOLD", "HarnessError")
    block = tree.of("goal/change")[1]["data"]
    assert (block["operation"], block["roundsStarted"]) == ("block", 3)
    assert block["goal"]["blockedReason"] == {"code": "model-reported", "message": "still stuck"}
    notice = [m for e in tree.of("agent/inbox/spliced") for m in e["data"].get("inserted", [])
              if m["source"]["kind"] == "tool-goal"]
    assert [m["source"]["summary"] for m in notice] == ["blocked: Obj"]
    assert notice[0]["content"][0]["text"].startswith('<goal_blocked>\nObjective: "Obj"\nBlocked: "still stuck"\n')


def test_a_failed_round_disarms_the_goal_until_a_user_resumes_it(goal_harness):
    replies = [
        call("create_goal", {"objective": "Obj", "max_goal_rounds": 3}),
        {"text": "t1"},
        {"error": {"code": "INVALID_REQUEST", "message": "bad request", "status": 400}},
        call("get_goal", {}),
        update(1, "resume"),
        {"text": "resumed"},
        {"text": "r2"},
        {"text": "r3"},
    ]
    tree = Tree(goal_harness(replies))
    session = tree.harness.start_session(SID)
    run_bounded(session, "Go")
    tree.until(lambda: [e["data"]["reason"]["kind"] for e in tree.of("turn/end")] == ["completed", "error"], "the failed round")
    resumed = run_bounded(session, "Please continue")
    out = results(resumed.events)
    assert view(out[0]["text"])["activation"] == "disarmed"
    goal = view(out[0]["text"])["goal"]
    assert goal == {"id": goal["id"], "revision": 1, "objective": "Obj", "phase": "active", "roundsStarted": 1,
                    "maxGoalRounds": 3}
    assert view(out[1]["text"])["activation"] == "armed"
    tree.until_event("goal/change", 3)
    goal = tree.of("goal/change")[0]["data"]["goal"]["id"]
    assert [c["data"]["operation"] for c in tree.of("goal/change")] == ["create", "resume", "block"]
    assert goal_inserts(tree.events()) == [
        {"kind": "goal", "goalId": goal, "revision": 1, "round": 1},
        {"kind": "goal", "goalId": goal, "revision": 2, "round": 2},
        {"kind": "goal", "goalId": goal, "revision": 2, "round": 3},
    ]


def test_a_prompt_sent_during_a_round_runs_before_the_next_round(goal_harness, workspace):
    gate = Gate(workspace)
    replies = [call("create_goal", {"objective": "Obj", "max_goal_rounds": 2}), {"text": "t1"},
               WAIT_FOR_GATE, {"text": "r1"}, {"text": "answer"}, {"text": "r2"}]
    tree = Tree(goal_harness(replies))
    session = tree.harness.start_session(SID)
    run_bounded(session, "Go")
    tree.until_event("tool/call", 1, where=lambda d: d["name"] == "bash")
    tree.harness.client.session_prompt(SID, [{"type": "text", "text": "A question"}])
    gate.open()
    tree.until_event("goal/change", 2)
    turns = [e["data"]["turn"] for e in tree.of("turn/start")]
    assert turns == [1, 2, 3, 4]
    user_turn = [m for m in tree.of("user/message") if m["data"]["source"]["kind"] in ("user", "goal")]
    assert [m["data"]["source"].get("round", "user") for m in user_turn] == ["user", 1, "user", 2]
    # The queued prompt's turn follows the round without an idle between.
    timeline = tree.timeline()
    end = [i for i, t in enumerate(timeline) if t == "turn/end"][1]
    assert timeline[end + 1] == "turn/start"


NEVER = {"text": "never", "delay_ms": 60000}


def until_round_asks(tree: Tree):
    """Waits until the first round's model request is out (and held)."""
    tree.until_event("request/header", 1, where=lambda d: d["reason"] == "series")


def test_shutdown_pauses_an_armed_goal_and_resume_keeps_it(make_harness, base_dir, dsh_home):
    before = [call("create_goal", {"objective": "Obj", "max_goal_rounds": 5}), {"text": "t1"}, NEVER]
    # The resumed process continues after the replies the history holds.
    after = before[:2] + [call("get_goal", {}), update(2, "resume"), {"text": "paused still"}, {"text": "nothing more"}]
    tree = Tree(make_harness(model=write_scenario(base_dir, before, "before.json")))
    run_bounded(tree.harness.start_session(SID), "Go")
    until_round_asks(tree)
    tree.harness.close()
    stored = read_log(log_file(dsh_home, SID))
    tail = [(e["type"], e["data"].get("operation") or e["data"].get("reason")) for e in stored[-2:]]
    assert tail == [("turn/end", {"kind": "aborted", "reason": {"kind": "disposed"}}), ("goal/change", "pause")]
    assert stored[-1]["data"]["goal"]["revision"] == 2 and stored[-1]["data"]["roundsStarted"] == 1

    again = Tree(make_harness(model=write_scenario(base_dir, after, "after.json")))
    session = again.harness.resume_session(SID)
    check = run_bounded(session, "Check")
    out = results(check.events)
    assert view(out[0]["text"])["goal"]["phase"] == "paused"
    assert view(out[0]["text"])["activation"] == "disarmed"
    # Only the user may resume it (the model cannot resume a paused goal).
    assert out[1]["error"]["code"] == "GOAL_TOOL_RESUME_PAUSED"
    more = run_bounded(session, "More?")
    assert more.final_response == "nothing more"
    assert goal_inserts(again.events()) == []


def test_a_killed_session_resumes_its_goal_disarmed(make_harness, base_dir):
    before = [call("create_goal", {"objective": "Obj", "max_goal_rounds": 3}), {"text": "t1"}, NEVER]
    after = before[:2] + [call("get_goal", {}), {"text": "disarmed"}, update(1, "resume"), {"text": "re-armed"},
                          {"text": "r2"}, {"text": "r3"}]
    tree = Tree(make_harness(model=write_scenario(base_dir, before, "before.json")))
    run_bounded(tree.harness.start_session(SID), "Go")
    until_round_asks(tree)
    tree.harness.client._proc.kill()
    tree.harness.client._proc.wait()

    again = Tree(make_harness(model=write_scenario(base_dir, after, "after.json")))
    session = again.harness.resume_session(SID)
    first = run_bounded(session, "Check")
    goal = view(results(first.events)[0]["text"])
    assert goal["activation"] == "disarmed"
    assert (goal["goal"]["phase"], goal["goal"]["revision"], goal["goal"]["roundsStarted"]) == ("active", 1, 1)
    second = run_bounded(session, "Resume it")
    assert view(results(second.events)[0]["text"])["activation"] == "armed"
    again.until_event("goal/change", 2)
    # No round started by itself after the resume: the rounds are the
    # re-armed goal's (revision 2), counted on from the interrupted one.
    inserts = goal_inserts(again.events())
    assert [(s["revision"], s["round"]) for s in inserts] == [(2, 2), (2, 3)]
    assert again.of("goal/change")[-1]["data"]["goal"]["blockedReason"]["code"] == "round-limit"


def test_a_fork_inherits_the_goal_disarmed_and_children_cannot_change_it(goal_harness):
    replies = [
        call("create_goal", {"objective": "Obj", "max_goal_rounds": 2}),
        {"text": "t1"},
        call("subagent_fork", {"description": "Fork goals", "prompt": "TASK-F look at the goal"}),
        {"text": "r1 delegated"},
        {"text": "noted the child"},
        {"text": "r2"},
    ]
    agents = [{"when": "TASK-F", "replies": [
        call("get_goal", {}),
        call("create_goal", {"objective": "child goal"}),
        update(1, "complete"),
        update(1, "pause"),
        {"text": "child done"},
    ]}]
    tree = Tree(goal_harness(replies, agents))
    run_bounded(tree.harness.start_session(SID), "Go")
    tree.until_event("goal/change", 2)
    [child] = {n.payload["sessionId"] for n in tree.seen if n.method == "session.event"} - {SID}
    out = results(tree.events(child))
    goal = tree.of("goal/change")[0]["data"]["goal"]["id"]
    assert view(out[0]["text"]) == {"goal": {"id": goal, "revision": 1, "objective": "Obj", "phase": "active",
                                             "roundsStarted": 0, "maxGoalRounds": 2}, "activation": "disarmed"}
    human = "Error: this goal operation requires a direct human turn on a top-level agent"
    assert out[1] == refusal(human, "GOAL_TOOL_AUTHORITY_REQUIRED", "HarnessError")
    assert out[2] == refusal("Error: complete and blocked require a direct human turn or the current goal round",
                             "GOAL_TOOL_AUTHORITY_REQUIRED", "HarnessError")
    assert out[3] == refusal(human, "GOAL_TOOL_AUTHORITY_REQUIRED", "HarnessError")
    assert tree.of("goal/change", child) == []
    # The next round waits for the child: its news is a turn of its own first.
    sources = [m["data"]["source"]["kind"] for m in tree.of("user/message")
               if m["data"]["source"]["kind"] in ("user", "goal", "subagent-settled")]
    assert sources == ["user", "goal", "subagent-settled", "goal"]


# ---------------------------------------------------------------------------
# Differential runs against the official runtime
# ---------------------------------------------------------------------------

def idle_after_turns(tree: Tree, turns: int) -> bool:
    """`turns` turns ended, the last one followed by `idle`."""
    return len(tree.of("turn/end")) == turns and tree.timeline()[-2:] == ["turn/end", "status:idle"]


DIFF_SCENARIOS = {
    "rounds_to_the_limit": (
        [call("create_goal", {"objective": "Make the tests pass", "max_goal_rounds": 2}, "toolu_1"),
         call("get_goal", {}, "toolu_2"), {"text": "turn one done"}, call("get_goal", {}, "toolu_3"),
         {"text": "round A"}, {"text": "round B"}],
        lambda tree: tree.timeline()[-1:] == ["goal/change"] and len(tree.of("goal/change")) == 2,
    ),
    "refusals": (
        [call("get_goal", {}, "toolu_1"),
         call("update_goal", {"goal_id": "goal-x", "revision": 1, "action": "pause"}, "toolu_2"),
         call("create_goal", {"objective": ""}, "toolu_3"),
         call("create_goal", {"objective": "x", "max_goal_rounds": 0}, "toolu_4"),
         call("create_goal", {"objective": "  Obj  ", "max_goal_rounds": 3}, "toolu_5"),
         call("update_goal", {"goal_id": "GOALID", "revision": 7, "action": "pause"}, "toolu_6"),
         call("create_goal", {"objective": "Second"}, "toolu_7"),
         call("update_goal", {"goal_id": G, "revision": 1, "action": "blocked"}, "toolu_8"),
         call("update_goal", {"goal_id": G, "revision": 1, "action": "resume"}, "toolu_9"),
         call("update_goal", {"goal_id": G, "revision": 1, "action": "edit", "max_goal_rounds": 2.5}, "toolu_10"),
         call("update_goal", {"goal_id": G, "revision": 1, "action": "pause"}, "toolu_11"),
         call("update_goal", {"goal_id": G, "revision": 2, "action": "resume"}, "toolu_12"),
         call("exit_plan_mode", {"plan": "1. do it"}, "toolu_13"),
         {"text": "end"}],
        lambda tree: idle_after_turns(tree, 1),
    ),
    "complete_in_a_round": (
        [call("create_goal", {"objective": "Ship", "max_goal_rounds": 3}, "toolu_1"), {"text": "t1"},
         call("update_goal", {"goal_id": G, "revision": 1, "action": "edit", "objective": "no"}, "toolu_2"),
         call("update_goal", {"goal_id": G, "revision": 1, "action": "complete"}, "toolu_3"),
         {"text": "Shipped."}],
        lambda tree: idle_after_turns(tree, 2),
    ),
    "failed_round": (
        [call("create_goal", {"objective": "Obj", "max_goal_rounds": 3}, "toolu_1"), {"text": "t1"},
         {"error": {"code": "X", "message": "bad request", "status": 400, "request_id": "fake-r1"}}],
        lambda tree: idle_after_turns(tree, 2),
    ),
}


def run_official_or_ours(binary, base: Path, server, settle):
    base.mkdir(parents=True)
    (base / "home").mkdir()
    (base / "ws").mkdir()
    harness = DeepSeekHarness(
        dsh_bin=str(binary), dsh_home=str(base / "dsh_home"), cwd=str(base / "ws"),
        provider="deepseek-official", model="deepseek-v4-flash", base_url=server.base_url, api_key=KEY,
        request_timeout_seconds=FRAME_TIMEOUT, env={"HOME": str(base / "home")},
    )
    try:
        tree = Tree(harness)
        run_bounded(harness.start_session(SID), "Work on the goal")
        tree.until(lambda: settle(tree), "the scenario's end")
        return [(n.method, copy.deepcopy(n.payload)) for n in tree.seen if n.payload.get("sessionId") == SID]
    finally:
        harness.close()


ROUND_WRAPPER = re.compile(r'^(<goal_(?:round|complete|blocked)>\nObjective: [^\n]*\n(?:Round: [^\n]*\n\n|Blocked: [^\n]*\n)?)')


def join_streamed_arguments(notifications):
    """A tool call's streamed argument pieces, joined (a goal id may be
    split between two pieces); the number of pieces is kept."""
    for method, params in notifications:
        event = params.get("event", {}) if method == "session.event" else {}
        if event.get("type") in ("assistant/message", "assistant/attempt"):
            for record in event["data"].get("stream", []):
                if isinstance(record.get("args"), list):
                    record["args"] = ["".join(record["args"]), f"<{len(record['args'])} pieces>"]
    return notifications


def normalise_goal_run(notifications, base: Path):
    notifications = join_streamed_arguments(copy.deepcopy(notifications))
    text = json.dumps(notifications).replace(str(base), "<base>")
    ids: dict[str, str] = {}
    text = GOAL_ID.sub(lambda m: ids.setdefault(m.group(0), f"goal-{len(ids)}"), text)
    notifications = json.loads(text)
    out = []
    events = [p["event"] for m, p in notifications if m == "session.event" and p["event"]["type"] not in REMOVED]
    renumber = {e["seq"]: i for i, e in enumerate(events)}
    for method, params in notifications:
        if method == "session.status":
            out.append(("status", params["status"]))
            continue
        if method != "session.event" or params["event"]["type"] in REMOVED:
            continue
        e = copy.deepcopy(params["event"])
        data = e["data"]
        kind = e["type"]
        if kind == "system/message":
            data["message"]["content"] = "<system>"
        if kind == "request/header":
            data["header"]["tools"] = "<tools>"
        if kind in ("user/message", "agent/inbox/spliced"):
            for message in [data] if kind == "user/message" else data.get("inserted", []):
                source = message.get("source", {})
                if source.get("kind") == "runtime-context":
                    message["content"] = "<prose>"
                    for section in source.get("sections", []):
                        section["text"] = "<prose>"
                elif source.get("kind") in ("goal", "tool-goal"):
                    for block in message["content"]:
                        match = ROUND_WRAPPER.match(block["text"])
                        block["text"] = (match.group(1) if match else "") + "<prose>"
        if kind in ("assistant/message", "assistant/attempt"):
            mask_usage(data)
        if kind == "goal/change":
            data["createdAt"] = data["updatedAt"] = "<time>"
        if kind == "session/title":
            data["messageSeqs"] = [renumber.get(s, s) for s in data["messageSeqs"]]
        e["seq"] = renumber[e["seq"]]
        if "sourceEventSeqs" in e:
            e["sourceEventSeqs"] = [renumber.get(s, s) for s in e["sourceEventSeqs"]]
        e.pop("time", None)
        out.append(("event", scrub(e)))
    return out


def normalise_goal_requests(server, base: Path):
    out = []
    for request in server.requests():
        if request["path"] != "/v1/messages":
            continue
        body = json.loads(GOAL_ID.sub("goal-<id>", json.dumps(request["body"]).replace(str(base), "<base>")))
        for key in ("dsh_session_log", "dsh_plugin_packages", "tools", "system", "metadata"):
            body.pop(key, None)
        for message in body.get("messages", []):
            for block in message["content"] if isinstance(message["content"], list) else []:
                if message["role"] == "user" and block.get("type") == "text" and block["text"] != "Work on the goal":
                    match = ROUND_WRAPPER.match(block["text"])
                    block["text"] = (match.group(1) if match else "") + "<prose>"
        out.append(body)
    return out


@pytest.mark.parametrize("name", sorted(DIFF_SCENARIOS))
def test_goals_behave_as_on_the_official_runtime(name, official_bin, dsh_bin, fake_model, base_dir):  # noqa: F811
    replies, settle = DIFF_SCENARIOS[name]
    runs = {}
    for who, binary in (("official", official_bin), ("ours", dsh_bin)):
        server = fake_model(replies)
        base = base_dir / who
        notifications = run_official_or_ours(binary, base, server, settle)
        runs[who] = (normalise_goal_run(notifications, base), normalise_goal_requests(server, base))
        (base_dir / f"{who}.norm.json").write_text(json.dumps(runs[who], indent=1))
    (official, official_requests), (ours, our_requests) = runs["official"], runs["ours"]
    assert [x[0] if x[0] == "status" else x[1]["type"] for x in ours] == \
        [x[0] if x[0] == "status" else x[1]["type"] for x in official]
    for mine, theirs in zip(ours, official):
        assert mine == theirs
    assert our_requests == official_requests


def wait_then_round(binary, base: Path, server) -> list[str]:
    """A `session/wait` pending when a goal's first turn ends: the order of
    the wait's answer and the first round's splice, `idle` and `running`
    around them (raw frames, one runtime)."""
    for name in ("dsh_home", "ws", "home"):
        (base / name).mkdir(parents=True)
    env = clean_env(base / "dsh_home", base / "home", **FULL_ACCESS,
                    DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY)
    client = RawClient(binary, base / "dsh_home", base / "ws", base / "home", env=env)
    try:
        client.result("initialize", {"cwd": str(base / "ws"), "provider": "deepseek-official",
                                     "model": "deepseek-v4-flash"})
        client.prompt(SID, "Work on the goal")
        # The first turn's `sleep` keeps it running while the wait arrives.
        client.wait_for(lambda f: f.get("method") == "session.event"
                        and f["params"]["event"]["type"] == "tool/call"
                        and f["params"]["event"]["data"]["name"] == "bash", what="the first turn's bash call")
        wait = client.send_request("session/wait", {"sessionId": SID})
        answered, response = client.response_to(wait)
        assert response == {"jsonrpc": "2.0", "id": wait, "result": {}}

        def round_splice(frame) -> bool:
            if frame.get("method") != "session.event":
                return False
            event = frame["params"]["event"]
            return event["type"] == "agent/inbox/spliced" and any(
                m.get("source", {}).get("kind") == "goal" for m in event["data"].get("inserted", []))

        spliced, _ = client.wait_for(round_splice, what="the first round's splice")
        idle = client.status(SID, "idle")
        running = client.status(SID, "running", start=idle)
        order = sorted([(answered, "wait answered"), (spliced, "round spliced"), (idle, "idle"),
                        (running, "running")])
        return [what for _, what in order]
    finally:
        client.kill()


def test_a_pending_wait_is_answered_before_the_goal_round_begins(official_bin, dsh_bin, fake_model, base_dir):  # noqa: F811
    """Issue 26 row 3: the official runtime answers a pending `session/wait`
    at the idle that ends the goal's first turn, before the round's message
    is spliced; dsh used to splice first."""
    replies = [call("create_goal", {"objective": "Obj", "max_goal_rounds": 1}, "toolu_1"),
               call("bash", {"description": "Wait a moment", "command": "sleep 0.5"}, "toolu_2"),
               {"text": "turn one done"}, {"text": "round one"}]
    runs = {}
    for who, binary in (("official", official_bin), ("ours", dsh_bin)):
        runs[who] = wait_then_round(binary, base_dir / who, fake_model(replies))
    assert runs["official"] == ["idle", "wait answered", "round spliced", "running"]
    assert runs["ours"] == runs["official"]
