"""Delegation through the official Python SDK: subagents, messages between
agents, interrupts, limits, forks, background-job wake-ups and
``session/wait`` over a session tree.

Every model is scripted: the parent plays the scenario's top-level
``replies``, each child the ``agents`` entry whose ``when`` occurs in its
task, so the tree runs the same way however its agents interleave.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from interop_support import FRAME_TIMEOUT, run_bounded


class Empty(BaseModel):
    """An empty result (`session/wait`)."""


def write(base_dir: Path, replies, agents=(), name="tree.json") -> str:
    path = base_dir / name
    path.write_text(json.dumps({"replies": list(replies), "agents": list(agents)}), encoding="utf-8")
    return str(path)


def call(name: str, arguments: dict, call_id: str, text: str | None = None) -> dict:
    blocks = [{"text": text}] if text else []
    return {"blocks": blocks + [{"tool_call": {"id": call_id, "name": name, "arguments": arguments}}]}


def calls(*specs) -> dict:
    return {"blocks": [{"tool_call": {"id": i, "name": n, "arguments": a}} for n, a, i in specs]}


def task(description: str, prompt: str) -> dict:
    return {"description": description, "prompt": prompt}


class Tree:
    """A session and every notification of its tree, in arrival order."""

    def __init__(self, harness, session_id: str):
        harness.start()
        self.client = harness.client
        self.session = harness.start_session(session_id)
        self.id = session_id
        self.subscription = self.client.subscribe_session_notifications(session_id)
        self.seen: list = []

    def run(self, prompt: str):
        return run_bounded(self.session, prompt)

    def wait(self, session_id: str | None = None) -> None:
        self.client.request(
            "session/wait", {"sessionId": session_id or self.id}, response_model=Empty, timeout_seconds=FRAME_TIMEOUT
        )
        self.drain()

    def drain(self) -> list:
        self.subscription.drain(self.seen.append)
        return self.seen

    def frames(self) -> list[tuple]:
        """(method, session, event type or status) of every notification."""
        out = []
        for n in self.drain():
            p = n.payload
            if n.method == "session.event":
                out.append(("event", p["sessionId"], p["event"]["type"]))
            elif n.method == "session.status":
                out.append(("status", p["sessionId"], p["status"]))
            else:
                out.append((n.method, p.get("parentSessionId"), p.get("childSessionId")))
        return out

    def events(self, session_id: str) -> list[dict]:
        return [
            n.payload["event"]
            for n in self.drain()
            if n.method == "session.event" and n.payload["sessionId"] == session_id
        ]

    def of(self, method: str) -> list[dict]:
        return [n.payload for n in self.drain() if n.method == method]

    def children(self) -> list[str]:
        return [p["childSessionId"] for p in self.of("subagent.started")]

    def tool_results(self, session_id: str | None = None) -> list[dict]:
        """The results' messages, each with the event's `error` (if any)."""
        return [
            {**e["data"]["message"], "error": e["data"].get("error")}
            for e in self.events(session_id or self.id)
            if e["type"] == "tool/result"
        ]


def text(message: dict) -> str:
    return "".join(b.get("text", "") for b in message["content"])


def test_one_child_runs_in_process_and_wakes_its_parent(make_harness, base_dir, dsh_home):
    model = write(
        base_dir,
        [call("subagent", task("Say hello", "TASK-A: reply with CHILD-OK"), "c1"), {"text": "Delegated."}, {"text": "Parent saw it."}],
        [{"when": "TASK-A", "replies": [{"text": "CHILD-OK", "delay_ms": 400}]}],
    )
    tree = Tree(make_harness(model=model), "parent")
    first = tree.run("Delegate a greeting")
    assert first.final_response == "Delegated."
    tree.wait()
    [child] = tree.children()
    assert len(child) == 36 and child.count("-") == 4  # a bare UUID

    frames = tree.frames()
    started = frames.index(("subagent.started", "parent", child))
    # The child is announced after the parent's tool/call and before any of its events.
    assert frames[started - 1] == ("event", "parent", "tool/call")
    assert all(f[1] != child for f in frames[:started])
    assert frames[started + 1] == ("event", child, "agent/inbox/spliced")
    # The parent's catalog entry and result follow the child's start.
    catalog = frames.index(("event", "parent", "subagent/catalog"))
    assert frames[catalog + 1] == ("event", "parent", "tool/result")
    [result] = tree.tool_results()
    assert text(result) == f"started subagent {child}" and result["isError"] is False

    # The child's log never publishes its creation events: its first event is seq 3.
    child_events = tree.events(child)
    assert child_events[0]["seq"] == 3
    assert [e["type"] for e in child_events][-1] == "turn/end"

    # Child idle -> parent notice -> running -> turn/start -> claim -> subagent.finished -> step/start.
    tail = frames[frames.index(("status", child, "idle")):]
    assert tail[:7] == [
        ("status", child, "idle"),
        ("event", "parent", "agent/inbox/spliced"),
        ("status", "parent", "running"),
        ("event", "parent", "turn/start"),
        ("event", "parent", "agent/inbox/spliced"),
        ("subagent.finished", "parent", child),
        ("event", "parent", "step/start"),
    ]
    [finished] = tree.of("subagent.finished")
    assert list(finished) == [
        "provider", "agentId", "parentSessionId", "childSessionId", "status", "stopReason", "lastAssistantMessage",
    ]
    assert finished == {
        "provider": "spawn", "agentId": child, "parentSessionId": "parent", "childSessionId": child,
        "status": "ok", "stopReason": "completed", "lastAssistantMessage": [{"type": "text", "text": "CHILD-OK"}],
    }
    notice = [e for e in tree.events("parent") if e["type"] == "user/message"][-1]["data"]
    assert notice["source"]["kind"] == "subagent-settled"
    assert notice["source"]["form"] == "notice"
    assert notice["source"]["senderSessionId"] == child
    assert len(notice["content"]) == 3 and notice["content"][2]["text"] == "CHILD-OK"
    assert notice["source"]["summary"] == notice["content"][0]["text"]

    # The child's log on disk: header, descriptor, delegated policies.
    [log] = list(dsh_home.glob(f"sessions/*/{child}/session.v4.jsonl*"))
    lines = read_log(log)
    header = lines[0]
    assert header["parentSession"] == "parent" and header["origin"] == "subagent"
    assert header["delegationDepth"] == 1 and header["isSeeded"] is False
    assert [(e["type"], e["data"].get("source")) for e in lines[1:4]] == [
        ("subagent/descriptor", None), ("sandbox/mode", "delegation"), ("approval/policy", "delegation"),
    ]
    assert lines[1]["data"] == {
        "version": 3, "mode": "continuable", "provider": "spawn", "label": "Say hello",
        "agentProvider": "scripted", "agentModel": model, "agentReasoningEffort": "high",
    }
    assert lines[3]["data"]["policy"] == "never"
    # The child inherits the model and says so explicitly (only maxTokens is a default).
    header_event = next(e for e in child_events if e["type"] == "request/header")
    assert header_event["data"]["header"]["config"]["reasoningEffort"] == "high"
    assert header_event["data"]["header"]["adapterDefaults"] == {"maxTokens": True}
    context = next(e for e in child_events if e["type"] == "user/message" and e["data"]["source"]["kind"] == "runtime-context")
    assert [s["name"] for s in context["data"]["source"]["sections"]][-3:] == [
        "tool:subagent:depth", "tool:subagent_fork:depth", "subagent:delegation",
    ]


def read_log(path: Path) -> list[dict]:
    data = path.read_bytes()
    if path.suffix == ".zstd":
        import zstandard

        data = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def test_two_children_in_one_step_finish_in_either_order(make_harness, base_dir):
    model = write(
        base_dir,
        [
            calls(("subagent", task("Slow", "TASK-SLOW"), "c1"), ("subagent", task("Fast", "TASK-FAST"), "c2")),
            {"text": "Two delegated."},
        ],
        [
            {"when": "TASK-SLOW", "replies": [{"text": "SLOW-DONE", "delay_ms": 600}]},
            {"when": "TASK-FAST", "replies": [{"text": "FAST-DONE", "delay_ms": 50}]},
        ],
    )
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Delegate two")
    tree.wait()
    slow, fast = tree.children()
    finished = tree.of("subagent.finished")
    # The fast child finished first although it was started second.
    assert [f["childSessionId"] for f in finished] == [fast, slow]
    assert [f["lastAssistantMessage"][0]["text"] for f in finished] == ["FAST-DONE", "SLOW-DONE"]
    notices = [e["data"] for e in tree.events("parent") if e["type"] == "user/message" and e["data"]["source"]["kind"] == "subagent-settled"]
    assert [n["source"]["senderSessionId"] for n in notices] == [fast, slow]
    # Each finished child appears once, and the parent ends idle after both.
    assert tree.frames()[-1] == ("status", "parent", "idle")


def test_child_failure_and_token_cap_are_reported(make_harness, base_dir):
    model = write(
        base_dir,
        [calls(("subagent", task("Fails", "TASK-FAIL"), "c1"), ("subagent", task("Cut", "TASK-CUT"), "c2")), {"text": "ok"}],
        [
            {"when": "TASK-FAIL", "replies": [{"error": {"code": "AUTH", "message": "bad key", "status": 401}}]},
            {"when": "TASK-CUT", "replies": [{"text": "partial", "stop": "max_tokens", "delay_ms": 300}]},
        ],
    )
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Delegate")
    tree.wait()
    fail, cut = tree.children()
    by_child = {f["childSessionId"]: f for f in tree.of("subagent.finished")}
    assert (by_child[fail]["status"], by_child[fail]["stopReason"]) == ("error", "error")
    assert "lastAssistantMessage" not in by_child[fail]
    # sdk counts a reply cut at the token cap as success (maxTokensAsSuccess).
    assert (by_child[cut]["status"], by_child[cut]["stopReason"]) == ("ok", "max-tokens")
    assert by_child[cut]["lastAssistantMessage"] == [{"type": "text", "text": "partial"}]


def test_max_tokens_as_success_can_be_turned_off(make_harness, base_dir):
    model = write(
        base_dir,
        [call("subagent", task("Cut", "TASK-CUT"), "c1"), {"text": "ok"}],
        [{"when": "TASK-CUT", "replies": [{"text": "partial", "stop": "max_tokens"}]}],
    )
    tree = Tree(make_harness(model=model, env={"DSH_MAX_TOKENS_AS_SUCCESS": "false"}), "parent")
    tree.run("Delegate")
    tree.wait()
    [finished] = tree.of("subagent.finished")
    assert (finished["status"], finished["stopReason"]) == ("error", "max-tokens")


def test_depth_and_fan_out_limits_are_tool_errors(make_harness, base_dir):
    nine = [("subagent", task(f"Task {i}", f"TASK-N{i}"), f"c{i}") for i in range(9)]
    model = write(
        base_dir,
        [calls(*nine), {"text": "ok"}],
        [{"when": "TASK-N0", "replies": [
            {**call("subagent", task("Nested", "TASK-NESTED"), "g1"), "delay_ms": 300}, {"text": "no grandchild"},
        ]}]
        + [{"when": f"TASK-N{i}", "replies": [{"text": f"done {i}", "delay_ms": 300}]} for i in range(1, 9)],
    )
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Fan out")
    tree.wait()
    results = tree.tool_results()
    assert [r["isError"] for r in results] == [False] * 8 + [True]
    assert text(results[8]).startswith("Error: subagent limit reached (active child limit: 8)")
    assert results[8]["error"] == {"name": "SubagentError", "code": "ACTIVATION_LIMIT_REACHED"}
    assert len(tree.children()) == 8
    first_child = tree.children()[0]
    [nested] = tree.tool_results(first_child)
    assert (nested["isError"], text(nested)) == (True, "Error: subagent depth 2 exceeds maxDepth 1")


def test_send_message_both_ways(make_harness, base_dir):
    model = write(
        base_dir,
        [
            call("subagent", task("Chat", "TASK-CHAT"), "c1"),
            {"text": "Started."},
            # Woken by the child's message: answer it, then an unknown id.
            calls(
                ("send_message", {"agent_id": "{{agent:0}}", "message": "HELLO-CHILD"}, "m1"),
                ("send_message", {"agent_id": "nobody", "message": "x"}, "m2"),
            ),
            {"text": "Answered."},
            {"text": "Saw the child finish."},
        ],
        [{"when": "TASK-CHAT", "replies": [
            call("send_message", {"agent_id": "parent", "message": "HELLO-PARENT"}, "s1"),
            {"text": "FIRST-DONE"},
            {"text": "SECOND-DONE"},
        ]}],
    )
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Delegate")
    tree.wait()
    [child] = tree.children()
    sent = tree.tool_results(child)[0]
    assert sent["isError"] is False and "parent" in text(sent)
    parent_messages = agent_messages(tree, "parent")
    assert [m["content"][-1]["text"] for m in parent_messages] == ["HELLO-PARENT"]
    assert parent_messages[0]["source"] == {"kind": "agent-message", "form": "relay", "senderSessionId": child}
    to_child, unknown = tree.tool_results()[1:3]
    assert (to_child["isError"], text(to_child)) == (False, f"message delivered to agent {child}")
    assert (unknown["isError"], text(unknown)) == (True, 'Error: subagent "nobody" is unavailable')
    assert unknown["error"] == {"name": "SubagentError", "code": "NOT_RESUMABLE"}
    child_messages = agent_messages(tree, child)
    assert [m["content"][-1]["text"] for m in child_messages] == ["HELLO-CHILD"]
    assert child_messages[0]["source"]["senderSessionId"] == "parent"
    # The child answered the parent's message in a turn of its own.
    finals = [f["lastAssistantMessage"][0]["text"] for f in tree.of("subagent.finished")]
    assert finals[-1] == "SECOND-DONE"


def agent_messages(tree: Tree, session_id: str) -> list[dict]:
    return [
        e["data"]
        for e in tree.events(session_id)
        if e["type"] == "user/message" and e["data"]["source"]["kind"] == "agent-message"
    ]


def test_interrupt_agent_stops_a_running_child(make_harness, base_dir):
    model = write(
        base_dir,
        [
            call("subagent", task("Slow", "TASK-SLOW"), "c1"),
            call("list_agents", {}, "l1"),
            call("interrupt_agent", {"agent_id": "{{agent:0}}"}, "i1"),
            call("interrupt_agent", {"agent_id": "nobody"}, "i2"),
            # An interrupt is asynchronous: the child settles a moment later.
            {**call("list_agents", {"scope": "descendants"}, "l2"), "delay_ms": 500},
            {"text": "Stopped and listed."},
        ],
        [{"when": "TASK-SLOW", "replies": [{"text": "never", "delay_ms": 30000}]}],
    )
    tree = Tree(make_harness(model=model), "parent")
    run = tree.run("Start slow work")
    assert run.final_response == "Stopped and listed."
    tree.wait()
    [child] = tree.children()
    results = tree.tool_results()
    assert text(results[1]) == f"{child} [running] — Slow"
    assert (results[2]["isError"], text(results[2])) == (False, f"interrupt requested for agent {child}")
    # Deliberate difference: the official runtime reports success for an
    # id that names no child; dsh says so.
    assert results[3]["isError"] is True and results[3]["error"]["code"] == "NOT_RESUMABLE"
    child_end = [e for e in tree.events(child) if e["type"] == "turn/end"][-1]
    assert child_end["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "parent"}}
    notice = [e["data"] for e in tree.events("parent") if e["type"] == "user/message"][-1]
    assert notice["source"]["kind"] == "subagent-settled" and len(notice["content"]) == 2
    [finished] = tree.of("subagent.finished")
    assert (finished["status"], finished["stopReason"]) == ("error", "aborted")
    assert text(results[4]) == f"{child} [inactive] parent=parent depth=1 — Slow"


def test_fork_sees_the_parents_completed_turns(make_harness, base_dir, dsh_home):
    model = write(
        base_dir,
        [
            {"text": "FIRST-ANSWER"},
            call("subagent_fork", task("Forked", "TASK-FORK"), "f1"),
            {"text": "forked"},
            {"text": "saw fork"},
        ],
        [{"when": "TASK-FORK", "replies": [{"text": "FORK-OK"}]}],
    )
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Remember PINEAPPLE")
    tree.run("Now fork")
    tree.wait()
    [child] = tree.children()
    [finished] = tree.of("subagent.finished")
    assert finished["provider"] == "fork"
    assert finished["lastAssistantMessage"] == [{"type": "text", "text": "FORK-OK"}]
    [log] = list(dsh_home.glob(f"sessions/*/{child}/session.v4.jsonl*"))
    lines = read_log(log)
    assert lines[0]["isSeeded"] is True
    [parent_log] = list(dsh_home.glob("sessions/*/parent/session.v4.jsonl*"))
    parent = read_log(parent_log)
    first_end = next(e["seq"] for e in parent[1:] if e["type"] == "turn/end")
    # The parent's first turn, copied event for event, then the seam.
    assert lines[1 : first_end + 2] == parent[1 : first_end + 2]
    seam = lines[first_end + 2]
    assert (seam["type"], seam["data"], seam["seq"]) == ("session/end-seed", {"inherited": True}, first_end + 1)
    assert [e["type"] for e in lines[first_end + 3 : first_end + 6]] == [
        "subagent/descriptor", "sandbox/mode", "approval/policy",
    ]
    assert lines[first_end + 3]["data"]["provider"] == "fork"
    # The child's own turn continues the parent's numbering, is announced
    # as a resumed request and does not repeat the system prompt.
    events = tree.events(child)
    assert events[0]["seq"] == first_end + 5
    assert next(e for e in events if e["type"] == "turn/start")["data"]["turn"] == 2
    assert "system/message" not in [e["type"] for e in events]
    assert next(e for e in events if e["type"] == "request/header")["data"]["reason"] == "resume"
    # The model saw the parent's first turn before its task.
    texts = [e["data"]["message"]["content"][0]["text"] for e in lines if e["type"] == "assistant/message"]
    assert texts == ["FIRST-ANSWER", "FORK-OK"]


def test_fork_in_the_first_turn_starts_fresh(make_harness, base_dir, dsh_home):
    model = write(
        base_dir,
        [call("subagent_fork", task("Forked", "TASK-FORK"), "f1"), {"text": "forked"}, {"text": "saw fork"}],
        [{"when": "TASK-FORK", "replies": [{"text": "FORK-OK"}]}],
    )
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Fork now")
    tree.wait()
    [child] = tree.children()
    [log] = list(dsh_home.glob(f"sessions/*/{child}/session.v4.jsonl*"))
    lines = read_log(log)
    assert lines[0]["isSeeded"] is False
    assert lines[1]["type"] == "subagent/descriptor" and lines[1]["data"]["provider"] == "fork"


def test_background_job_wakes_an_idle_agent(make_harness, base_dir):
    model = write(
        base_dir,
        [
            call("bash", {"description": "bg", "command": "sleep 0.5; echo BG-DONE", "run_in_background": True}, "b1"),
            {"text": "Started in the background."},
            {"text": "The job is done."},
        ],
    )
    tree = Tree(make_harness(model=model, env={"DSH_PERMISSION_MODE": "danger-full-access"}), "parent")
    first = tree.run("Run it in the background")
    assert first.final_response == "Started in the background."
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(
        e["type"] == "turn/end" and e["data"]["turn"] == 2 for e in tree.events("parent")
    ):
        time.sleep(0.05)  # polling interval only
    last = first.events[-1]["seq"]
    after = [e for e in tree.events("parent") if e["seq"] > last]
    kinds = [e["type"] for e in after]
    assert kinds[:4] == ["job/settled", "agent/inbox/spliced", "turn/start", "agent/inbox/spliced"]
    notice = next(e["data"] for e in after if e["type"] == "user/message")
    assert notice["source"]["kind"] == "tool-jobs" and notice["source"]["form"] == "notice"
    job_id = after[0]["data"]["jobId"]
    assert job_id in notice["content"][0]["text"] and "exit code: 0" in notice["content"][0]["text"]
    assert "job_output" in notice["content"][0]["text"]
    assert after[-1]["type"] == "turn/end"


def test_session_wait_on_parent_and_child(make_harness, base_dir):
    model = write(
        base_dir,
        [call("subagent", task("Slow", "TASK-SLOW"), "c1"), {"text": "Delegated."}, {"text": "Woken."}],
        [{"when": "TASK-SLOW", "replies": [{"text": "SLOW-OK", "delay_ms": 500}]}],
    )
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Delegate")
    [child] = tree.children()
    tree.wait(child)
    assert ("status", child, "idle") in tree.frames()
    tree.wait()
    # The parent's wait returned only after the wake-up turn ended.
    assert tree.frames()[-1] == ("status", "parent", "idle")
    assert [e for e in tree.events("parent") if e["type"] == "turn/end"][-1]["data"]["turn"] == 2


@pytest.mark.parametrize("profile", ["sdk-minimal"])
def test_sdk_minimal_has_no_delegation_tools(make_harness, base_dir, profile):
    model = write(base_dir, [call("subagent", task("x", "TASK-X"), "c1"), {"text": "ok"}])
    tree = Tree(make_harness(model=model, profile=profile), "parent")
    tree.run("Delegate")
    [result] = tree.tool_results()
    assert result["isError"] is True and "unknown tool" in text(result)
    assert tree.children() == []


def test_resume_after_sigkill_repairs_and_reopens_a_running_child(make_harness, base_dir, dsh_home):
    model = write(
        base_dir,
        [
            call("subagent", task("Doomed", "TASK-DOOMED"), "c1"),
            {"text": "Delegated."},
            # After the resume:
            calls(("list_agents", {}, "l1"), ("send_message", {"agent_id": "{{agent:0}}", "message": "AGAIN"}, "m1")),
            {"text": "Asked again."},
            {"text": "Saw the second answer."},
        ],
        [{"when": "TASK-DOOMED", "replies": [{"text": "never", "delay_ms": 60000}]}],
    )
    # The second process plays the child's answer to the parent's message
    # (the interrupted reply left nothing in its history to count).
    parent_replies = json.loads(Path(model).read_text())["replies"]
    # The answer comes after the parent's turn has ended (its news then
    # starts a turn of its own).
    after = write(base_dir, parent_replies, [{"when": "TASK-DOOMED", "replies": [{"text": "SECOND-ANSWER", "delay_ms": 1500}]}], "after.json")
    first = Tree(make_harness(model=model), "parent")
    first.run("Delegate")
    [child] = first.children()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and "step/start" not in [e["type"] for e in first.events(child)]:
        time.sleep(0.02)  # polling interval only
    first.client._proc.kill()
    first.client._proc.wait()

    harness = make_harness(model=after)
    harness.start()
    subscription = harness.client.subscribe_session_notifications("parent")
    session = harness.resume_session("parent")
    # The child's interrupted turn was repaired on disk when its parent resumed.
    [log] = list(dsh_home.glob(f"sessions/*/{child}/session.v4.jsonl*"))
    tail = read_log(log)[-3:]
    assert [e["type"] for e in tail] == ["step/end", "turn/end", "session/end-seed"]
    assert tail[1]["data"]["reason"] == {"kind": "interrupted"}
    # Resuming the reopened child answers {} and re-announces the edge.
    harness.resume_session(child)
    result = run_bounded(session, "Check on it")
    assert result.final_response == "Asked again."
    harness.client.request("session/wait", {"sessionId": "parent"}, response_model=Empty, timeout_seconds=FRAME_TIMEOUT)
    seen: list = []
    subscription.drain(seen.append)
    started = [n.payload for n in seen if n.method == "subagent.started"]
    assert started and all(p == {"parentSessionId": "parent", "childSessionId": child} for p in started)
    results = [e["data"]["message"] for e in result.events if e["type"] == "tool/result"]
    assert text(results[0]) == f"{child} [inactive] — Doomed"
    assert text(results[1]) == f"message delivered to agent {child}"
    finished = [n.payload for n in seen if n.method == "subagent.finished"]
    assert finished[-1]["lastAssistantMessage"] == [{"type": "text", "text": "SECOND-ANSWER"}]
