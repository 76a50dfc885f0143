"""dsh's steering extensions (issue 27), driven over raw stdio against the
real binary with the offline `scripted` provider: `initialize`
capabilities, `session/cancel`, and approvals answered over the protocol
(`approval/request`, runtime → client). Every refusal is checked on the
file system and the process table: the command never ran."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest

from interop_support import session_events

SID = "session-steer"


def call(name: str, arguments: dict, call_id: str = "toolu_1", **extra) -> dict:
    return {"blocks": [{"tool_call": {"id": call_id, "name": name, "arguments": arguments}}], **extra}


def bash(command: str, call_id: str = "toolu_1", escalate: bool = False, **extra) -> dict:
    arguments = {"description": "Run", "command": command}
    if escalate:
        arguments |= {"sandbox_permissions": "danger-full-access", "justification": "The task needs it."}
    return call("bash", arguments, call_id, **extra)


def live(marker: str) -> list[int]:
    """Processes whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry))
        except OSError:
            continue
    return found


def events(raw, kind: str, session: str = SID) -> list[dict]:
    return [e for e in session_events(raw.frames, session) if e["type"] == kind]


def turn_ends(raw, session: str = SID) -> list[dict]:
    return [e["data"] for e in events(raw, "turn/end", session)]


def wait_event(raw, kind: str, start: int = 0, session: str = SID, **match) -> dict:
    _, frame = raw.wait_for(
        lambda f: f.get("method") == "session.event" and f["params"]["sessionId"] == session
        and f["params"]["event"]["type"] == kind
        and all(f["params"]["event"]["data"].get(k) == v for k, v in match.items()),
        start=start, what=kind,
    )
    return frame["params"]["event"]["data"]


def cancel(raw, **params) -> dict:
    return raw.result("session/cancel", {"sessionId": SID, **params})


# -- initialize -------------------------------------------------------------

def test_a_client_that_asks_for_nothing_gets_the_official_result(make_raw, workspace):
    raw = make_raw()
    result = raw.initialize(workspace)
    assert sorted(result) == ["serverInfo"]


def test_capabilities_are_named_to_a_client_that_declares_its_own(make_raw, workspace):
    raw = make_raw()
    result = raw.initialize(workspace, protocolVersion="dsh-1", clientCapabilities={"approvals": True, "future": False})
    assert result["protocolVersion"] == "dsh-1"
    assert result["capabilities"] == {"cancel": True, "approvals": True, "approvalRules": True, "sessionEvents": True,
                                      "deltas": True, "usage": True, "budgets": True, "sessionList": True,
                                      "sessionFork": True, "mcp": True, "hooks": True}


@pytest.mark.parametrize(("field", "value", "message"), [
    ("protocolVersion", 1, "initialize protocolVersion must be a string"),
    ("clientCapabilities", {"approvals": "yes"}, "initialize clientCapabilities must be an object of booleans"),
    ("approvalTimeoutMs", -5, "initialize approvalTimeoutMs must be a non-negative safe integer (0 waits for ever)"),
])
def test_bad_extension_fields_are_refused_clearly(make_raw, workspace, field, value, message):
    raw = make_raw()
    error = raw.error("initialize", {"cwd": str(workspace), "provider": "scripted", "model": "echo", field: value})
    assert error["message"] == message


# -- session/cancel ---------------------------------------------------------

def test_cancel_during_a_model_stream_ends_the_turn_and_the_next_prompt_runs(make_raw, workspace, scenario):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "too late", "delay_ms": 20000}, {"text": "Second answer."}]))
    raw.prompt(SID, "first")
    wait_event(raw, "step/start")
    started = time.monotonic()
    assert cancel(raw) == {"turn": 1, "droppedPrompts": 0}
    raw.status(SID, "idle")
    assert time.monotonic() - started < 5, "the stream was not dropped"
    assert turn_ends(raw) == [{"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "client"}}}]
    assert not [e for e in events(raw, "assistant/message")], "no reply was recorded"
    # The session goes on; a second cancel on the idle session names no turn.
    assert cancel(raw) == {"turn": None, "droppedPrompts": 0}
    start = len(raw.frames)
    raw.prompt(SID, "second")
    raw.status(SID, "idle", start=start)
    assert turn_ends(raw)[-1] == {"turn": 2, "reason": {"kind": "completed"}}


def test_cancel_during_a_long_bash_kills_its_process_tree(make_raw, workspace, scenario):
    marker = f"{uuid.uuid4().int % 10**6}.25"
    # A tree: the command starts two more sleepers in the background.
    command = f"sleep {marker} & sleep {marker} & sleep {marker}"
    raw = make_raw()
    raw.initialize(workspace, model=scenario([bash(command), {"text": "never"}]))
    raw.prompt(SID, "run it")
    wait_event(raw, "job/registered")
    deadline = time.monotonic() + 10
    while len(live(marker)) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(live(marker)) >= 3
    assert cancel(raw)["turn"] == 1
    raw.status(SID, "idle")
    result = events(raw, "tool/result")[0]["data"]
    assert result["message"]["content"] == [{"type": "text", "text": "Error: tool call aborted"}]
    assert result["error"] == {"name": "AbortError", "code": "ABORTED"}
    settled = events(raw, "job/settled")[0]["data"]
    assert (settled["status"], settled["cause"]) == ("killed", "kill")
    deadline = time.monotonic() + 5
    while live(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert live(marker) == []
    assert turn_ends(raw)[0]["reason"] == {"kind": "aborted", "reason": {"kind": "client"}}


def test_cancel_racing_a_prompt_cancels_that_turn(make_raw, workspace, scenario):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "slow", "delay_ms": 20000}, {"text": "next"}]))
    prompt_id = raw.send_request("session/prompt", {"sessionId": SID, "contentBlocks": [{"type": "text", "text": "go"}]})
    cancel_id = raw.send_request("session/cancel", {"sessionId": SID})
    raw.response_to(prompt_id)
    _, answer = raw.response_to(cancel_id)
    assert answer["result"]["turn"] == 1
    raw.status(SID, "idle")
    assert turn_ends(raw) == [{"turn": 1, "reason": {"kind": "aborted", "reason": {"kind": "client"}}}]


@pytest.mark.parametrize("drop", [False, True])
def test_queued_prompts_stay_queued_unless_dropped(make_raw, workspace, scenario, drop):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "slow", "delay_ms": 20000}, {"text": "queued answer"}]))
    raw.prompt(SID, "first")
    raw.prompt(SID, "queued")
    wait_event(raw, "step/start")
    assert cancel(raw, dropQueued=drop) == {"turn": 1, "droppedPrompts": 1 if drop else 0}
    if drop:
        raw.status(SID, "idle")
        time.sleep(0.3)  # nothing else may start
        assert [t["turn"] for t in turn_ends(raw)] == [1]
        dropped = [e["data"] for e in events(raw, "agent/inbox/spliced") if e["data"].get("outcome") == "canceled"]
        assert dropped == [{"target": "next-turn", "start": 0, "removedCount": 1, "inserted": [], "outcome": "canceled"}]
    else:
        wait_event(raw, "turn/end", turn=2)
        assert turn_ends(raw)[1] == {"turn": 2, "reason": {"kind": "completed"}}


@pytest.mark.parametrize("keep", [False, True])
def test_background_jobs_of_the_turn_are_killed_unless_kept(make_raw, workspace, scenario, keep):
    marker = f"{uuid.uuid4().int % 10**6}.5"
    raw = make_raw()
    raw.initialize(workspace, model=scenario([
        call("bash", {"description": "bg", "command": f"sleep {marker}", "run_in_background": True}),
        {"text": "waiting", "delay_ms": 20000},
    ]))
    raw.prompt(SID, "start a job")
    wait_event(raw, "step/start", step=2)
    assert live(marker)
    cancel(raw, keepJobs=keep)
    raw.status(SID, "idle")
    deadline = time.monotonic() + 5
    while live(marker) and time.monotonic() < deadline and not keep:
        time.sleep(0.02)
    assert bool(live(marker)) == keep
    if keep:
        for pid in live(marker):
            os.kill(pid, 9)


def test_cancel_stops_the_children_the_turn_started(make_raw, workspace, scenario):
    marker = f"{uuid.uuid4().int % 10**6}.75"
    raw = make_raw()
    path = Path(scenario([
        call("subagent", {"description": "Long", "prompt": "CHILD-TASK run"}),
        {"text": "delegated", "delay_ms": 20000},
    ]))
    # The child's script answers its task.
    import json
    data = json.loads(path.read_text())
    data["agents"] = [{"when": "CHILD-TASK", "replies": [bash(f"sleep {marker}", "toolu_c"), {"text": "never"}]}]
    path.write_text(json.dumps(data))
    raw.initialize(workspace, model=str(path))
    raw.prompt(SID, "delegate")
    _, started = raw.wait_for(lambda f: f.get("method") == "subagent.started", what="subagent.started")
    child = started["params"]["childSessionId"]
    deadline = time.monotonic() + 10
    while not live(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert live(marker)
    assert cancel(raw)["turn"] == 1
    raw.status(SID, "idle")
    wait_event(raw, "turn/end", session=child)
    assert turn_ends(raw, child)[0]["reason"]["kind"] == "aborted"
    deadline = time.monotonic() + 5
    while live(marker) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert live(marker) == []


def test_cancel_params_and_unknown_sessions_are_refused(make_raw, workspace):
    raw = make_raw()
    raw.initialize(workspace)
    assert raw.error("session/cancel", {"sessionId": ""})["message"] == "session/cancel requires a non-empty sessionId string"
    assert raw.error("session/cancel", {"sessionId": "s", "dropQueued": "yes"})["message"] == "session/cancel dropQueued must be a boolean"
    assert raw.error("session/cancel", {"sessionId": "nobody"})["message"] == "unknown SDK session: nobody"


# -- approvals --------------------------------------------------------------

def approving_client(make_raw, workspace, scenario, replies, **init):
    raw = make_raw()
    raw.initialize(workspace, model=scenario(replies), clientCapabilities={"approvals": True}, **init)
    return raw


def next_approval(raw, start: int = 0) -> tuple[int, dict]:
    return raw.wait_for(lambda f: f.get("method") == "approval/request", start=start, what="approval/request")


def answer(raw, request: dict, result=None, error=None) -> None:
    frame = {"jsonrpc": "2.0", "id": request["id"]}
    frame |= {"error": error} if error is not None else {"result": result}
    raw.send(frame)


def decided(raw) -> list[dict]:
    return [e["data"] for e in events(raw, "approval/decided")]


def tool_text(raw, index: int = 0) -> str:
    return events(raw, "tool/result")[index]["data"]["message"]["content"][0]["text"]


def test_allow_once_runs_the_call_with_the_wider_sandbox(make_raw, workspace, scenario):
    raw = approving_client(make_raw, workspace, scenario, [bash("touch ran.txt", escalate=True), {"text": "done"}])
    raw.prompt(SID, "go")
    _, request = next_approval(raw)
    params = request["params"]
    assert (params["sessionId"], params["rootSessionId"], params["toolName"], params["callId"]) == (SID, SID, "bash", "toolu_1")
    assert params["arguments"]["command"] == "touch ran.txt"
    assert params["reason"] == "escalate sandbox to danger-full-access: The task needs it."
    assert params["options"] == ["allow-once", "allow-session", "reject"]
    asked = events(raw, "approval/asked")[0]["data"]
    assert asked["id"] == params["approvalId"]
    assert not (workspace / "ran.txt").exists(), "ran before the answer"
    answer(raw, request, {"decision": "allow-once"})
    raw.status(SID, "idle")
    assert (workspace / "ran.txt").exists()
    assert decided(raw) == [{"id": params["approvalId"], "outcome": "approved", "decidedBy": "client", "scope": "once"}]


def test_allow_session_is_asked_once_for_the_same_tool_and_access(make_raw, workspace, scenario):
    raw = approving_client(make_raw, workspace, scenario, [
        bash("touch one.txt", "toolu_1", escalate=True), bash("touch two.txt", "toolu_2", escalate=True), {"text": "done"}])
    raw.prompt(SID, "go")
    _, request = next_approval(raw)
    answer(raw, request, {"decision": "allow-session"})
    raw.status(SID, "idle")
    assert (workspace / "one.txt").exists() and (workspace / "two.txt").exists()
    assert len([f for f in raw.frames if f.get("method") == "approval/request"]) == 1
    assert [(d["outcome"], d["decidedBy"], d["scope"]) for d in decided(raw)] == [
        ("approved", "client", "session"), ("approved", "session-grant", "session")]


def test_a_rejection_passes_its_message_to_the_model_and_nothing_runs(make_raw, workspace, scenario):
    marker = f"{uuid.uuid4().int % 10**6}.125"
    raw = approving_client(make_raw, workspace, scenario, [
        bash(f"touch ran.txt; sleep {marker}", escalate=True), {"text": "ok"}])
    raw.prompt(SID, "go")
    _, request = next_approval(raw)
    answer(raw, request, {"decision": "reject", "message": "Not on my machine."})
    raw.status(SID, "idle")
    assert not (workspace / "ran.txt").exists() and live(marker) == []
    assert tool_text(raw) == 'Error: sandbox escalation to "danger-full-access" was rejected: Not on my machine.'
    assert decided(raw)[0] | {"id": None} == {
        "id": None, "outcome": "rejected", "decidedBy": "client", "message": "Not on my machine."}


@pytest.mark.parametrize(("reply", "outcome", "text_part"), [
    ({"error": {"code": -32000, "message": "boom"}}, "rejected", "the client answered with an error: boom"),
    ({"error": {"code": -32601, "message": "Method not found"}}, "unavailable", "requires approval, but no approval channel is available"),
    ({"result": {"decision": "maybe"}}, "rejected", "the client's answer is not a decision"),
    (None, "rejected", "no answer within 300 ms"),
])
def test_every_answer_but_an_approval_refuses_the_call(make_raw, workspace, scenario, reply, outcome, text_part):
    raw = approving_client(make_raw, workspace, scenario, [bash("touch ran.txt", escalate=True), {"text": "ok"}],
                           approvalTimeoutMs=300)
    raw.prompt(SID, "go")
    _, request = next_approval(raw)
    if reply is not None:
        answer(raw, request, result=reply.get("result"), error=reply.get("error"))
    raw.status(SID, "idle")
    assert not (workspace / "ran.txt").exists()
    assert decided(raw)[0]["outcome"] == outcome
    assert text_part in tool_text(raw) or text_part in decided(raw)[0].get("message", "")


def test_a_client_that_closes_its_input_while_asked_runs_nothing(make_raw, workspace, scenario):
    raw = approving_client(make_raw, workspace, scenario, [bash("touch ran.txt", escalate=True), {"text": "ok"}])
    raw.prompt(SID, "go")
    next_approval(raw)
    raw.proc.stdin.close()
    assert raw.wait_exit() == 0
    assert not (workspace / "ran.txt").exists()


def test_session_cancel_ends_a_pending_approval_as_cancelled(make_raw, workspace, scenario):
    raw = approving_client(make_raw, workspace, scenario, [bash("touch ran.txt", escalate=True), {"text": "ok"}])
    raw.prompt(SID, "go")
    _, request = next_approval(raw)
    assert cancel(raw)["turn"] == 1
    raw.status(SID, "idle")
    assert decided(raw)[0]["outcome"] == "cancelled"
    # A late answer changes nothing.
    answer(raw, request, {"decision": "allow-once"})
    time.sleep(0.3)
    assert not (workspace / "ran.txt").exists()
    assert turn_ends(raw)[0]["reason"] == {"kind": "aborted", "reason": {"kind": "client"}}


def test_policy_rules_decide_before_the_client_is_asked(make_raw, workspace, scenario):
    rules = {"deny": [{"tool": "bash", "commandPrefix": "rm "}], "allow": [{"tool": "bash", "commandPrefix": "touch "}]}
    raw = approving_client(make_raw, workspace, scenario, [
        bash("rm -f keep.txt", "toolu_1", escalate=True), bash("touch allowed.txt", "toolu_2", escalate=True),
        {"text": "done"}], approvalRules=rules)
    (workspace / "keep.txt").write_text("keep")
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    assert not [f for f in raw.frames if f.get("method") == "approval/request"]
    assert (workspace / "keep.txt").exists() and (workspace / "allowed.txt").exists()
    assert [(d["outcome"], d["decidedBy"]) for d in decided(raw)] == [("rejected", "rule"), ("approved", "rule")]


def test_without_the_capability_the_official_unavailable_path_stays(make_raw, workspace, scenario):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([bash("touch ran.txt", escalate=True), {"text": "ok"}]))
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    assert not [f for f in raw.frames if f.get("method") == "approval/request"]
    assert not (workspace / "ran.txt").exists()
    assert decided(raw) == [{"id": events(raw, "approval/asked")[0]["data"]["id"], "outcome": "unavailable"}]
    assert tool_text(raw) == ('Error: sandbox escalation to "danger-full-access" requires approval, '
                              "but no approval channel is available")


# -- the official Python SDK ------------------------------------------------

class _Result(__import__("pydantic").BaseModel):
    """Any JSON object result."""

    model_config = {"extra": "allow"}


def sdk_with_approvals(make_harness, workspace, model: str):
    """An official-SDK harness whose client declared `approvals` (the SDK's
    own initialize sends only the official params; the extension is a
    second, raw initialize before any session exists)."""
    harness = make_harness(model=model)
    harness.start()
    harness.client.request("initialize", {
        "cwd": str(workspace), "provider": "scripted", "model": model,
        "clientCapabilities": {"approvals": True},
    }, response_model=_Result)
    return harness


@pytest.mark.parametrize("decision", ["allow-once", "reject"])
def test_the_official_sdk_answers_approvals_with_next_request_and_respond(make_harness, workspace, scenario, decision):
    import threading

    harness = sdk_with_approvals(make_harness, workspace, scenario([bash("touch ran.txt", escalate=True), {"text": "done"}]))
    asked = []

    def approver():
        request = harness.client.next_request()
        asked.append(request)
        harness.client.respond(request.id, {"decision": decision, "message": "No."})

    thread = threading.Thread(target=approver, daemon=True)
    thread.start()
    result = harness.start_session(SID).run("go")
    thread.join(5)
    assert [(r.method, r.payload["toolName"]) for r in asked] == [("approval/request", "bash")]
    assert (workspace / "ran.txt").exists() == (decision == "allow-once")
    assert result.final_response == "done"
    outcomes = [e["data"]["outcome"] for e in result.events if e["type"] == "approval/decided"]
    assert outcomes == ["approved" if decision == "allow-once" else "rejected"]


def test_the_official_sdk_cancels_a_running_turn_from_another_thread(make_harness, workspace, scenario):
    import threading

    harness = make_harness(model=scenario([{"text": "late", "delay_ms": 20000}, {"text": "after"}]))
    session = harness.start_session(SID)
    results = []
    runner = threading.Thread(target=lambda: results.append(session.run("slow")), daemon=True)
    runner.start()
    deadline = time.monotonic() + 10
    answer = {"turn": None}
    from deepseek_harness.errors import JsonRpcError

    while answer["turn"] is None and time.monotonic() < deadline:
        try:
            answer = harness.client.request("session/cancel", {"sessionId": SID}, response_model=_Result).model_dump()
        except JsonRpcError as error:  # the prompt has not created the session yet
            assert "unknown SDK session" in str(error)
        time.sleep(0.02)
    runner.join(10)
    assert answer == {"turn": 1, "droppedPrompts": 0}
    assert results and results[0].events[-1]["type"] == "turn/end"
    assert results[0].events[-1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "client"}}
    assert session.run("again").final_response == "after"


def test_a_subagent_asks_through_its_root_sessions_client(make_raw, workspace, scenario):
    import json

    path = Path(scenario([call("subagent", {"description": "Helper", "prompt": "CHILD-ESCALATES now"}),
                          {"text": "delegated"}, {"text": "child reported"}]))
    data = json.loads(path.read_text())
    data["agents"] = [{"when": "CHILD-ESCALATES", "replies": [
        bash("touch child-ran.txt", "toolu_c", escalate=True), {"text": "child done"}]}]
    path.write_text(json.dumps(data))
    raw = make_raw()
    raw.initialize(workspace, model=str(path), clientCapabilities={"approvals": True})
    raw.prompt(SID, "delegate")
    _, started = raw.wait_for(lambda f: f.get("method") == "subagent.started", what="subagent.started")
    child = started["params"]["childSessionId"]
    _, request = next_approval(raw)
    assert (request["params"]["sessionId"], request["params"]["rootSessionId"]) == (child, SID)
    answer(raw, request, {"decision": "allow-once"})
    raw.wait_for(lambda f: f.get("method") == "subagent.finished", what="subagent.finished")
    assert (workspace / "child-ran.txt").exists()
    assert [e["data"]["outcome"] for e in events(raw, "approval/decided", child)] == ["approved"]


def test_policy_rules_from_a_patch_overlay_apply_to_every_session(make_raw, workspace, scenario, base_dir):
    overlay = base_dir / "rules.yaml"
    overlay.write_text("approvalRules:\n  deny:\n    - tool: bash\n      commandPrefix: 'touch '\n")
    raw = make_raw(args=["--profile", "sdk", "--patch", str(overlay)])
    raw.initialize(workspace, model=scenario([bash("touch ran.txt", escalate=True), {"text": "ok"}]),
                   clientCapabilities={"approvals": True})
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    assert not [f for f in raw.frames if f.get("method") == "approval/request"]
    assert not (workspace / "ran.txt").exists()
    assert [(d["outcome"], d["decidedBy"]) for d in decided(raw)] == [("rejected", "rule")]


def test_a_bad_rule_in_a_patch_overlay_stops_the_launch(make_raw, base_dir):
    overlay = base_dir / "rules.yaml"
    overlay.write_text("approvalRules:\n  deny:\n    - tool: bash\n      regex: '.*'\n")
    raw = make_raw(args=["--profile", "sdk", "--patch", str(overlay)])
    assert raw.wait_exit() == 1
    raw._err_reader.join(5)  # stderr read to its end
    assert b"approvalRules" in raw.stderr and b"regex" in raw.stderr
