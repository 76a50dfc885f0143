"""Command hooks (issue 31): hook scripts of the kinds people publish for
Claude Code, in bash and Python (tests/interop/hooks/), run by the real
`dsh` binary driven through the official Python SDK (and, for the
extension fields, raw frames), `dsh headless` and `dsh acp` (through the
protocol's Python SDK). Every decision is checked where it lands: the file
system, the tool result the model reads, the provider request, the turn's
end and the session log (`dsh/hook-run`). The contract is docs/hooks.md.

Run:  cd /work/main && DSH_BIN=$PWD/target/debug/dsh DSH_FAKE_MODEL=$PWD/target/debug/dsh-fake-model \\
        target/venv/bin/python -m pytest tests/interop/test_hooks.py -q -p no:cacheprovider
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from pathlib import Path

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT, RUN_TIMEOUT, FakeModel, clean_env, session_events
from test_acp import choose, launch, run  # noqa: F401 - fixture
from test_differential import official_bin  # noqa: F401 - fixture

HOOKS = Path(__file__).resolve().parent / "hooks"
SID = "session-hooks"
KEY = "sk-hooks-test-0000"


# ---------------------------------------------------------------------------
# Configuration and scripted replies
# ---------------------------------------------------------------------------


def hook(script: str, *args: str, **extra) -> dict:
    """A command hook running one of tests/interop/hooks/ (or a shell line)."""
    path = HOOKS / script
    command = (f'"{path}"' if path.exists() else script) + "".join(f" {a}" for a in args)
    return {"type": "command", "command": command, **extra}


def group(matcher: str | None, *hooks: dict) -> dict:
    entry = {"hooks": list(hooks)}
    if matcher is not None:
        entry["matcher"] = matcher
    return entry


def install(dsh_home: Path, hooks: dict) -> None:
    """Writes DSH_HOME/hooks.json in Claude Code's settings.json shape."""
    (dsh_home / "hooks.json").write_text(json.dumps({"hooks": hooks}))


def call(name: str, arguments: dict, call_id: str = "toolu_1") -> dict:
    return {"blocks": [{"tool_call": {"id": call_id, "name": name, "arguments": arguments}}]}


def bash(command: str, call_id: str = "toolu_1") -> dict:
    return call("bash", {"description": "Run a command", "command": command}, call_id)


def write(path: str, content: str, call_id: str = "toolu_1") -> dict:
    return call("write", {"file_path": path, "content": content}, call_id)


def hook_runs(events: list[dict], event: str | None = None) -> list[dict]:
    return [e["data"] for e in events if e["type"] == "dsh/hook-run" and (event is None or e["data"]["event"] == event)]


def tool_texts(events: list[dict]) -> list[str]:
    return ["".join(b.get("text", "") for b in e["data"]["message"]["content"])
            for e in events if e["type"] == "tool/result"]


def turn_ends(events: list[dict]) -> list[dict]:
    return [e["data"]["reason"] for e in events if e["type"] == "turn/end"]


def sdk_run(make_harness, model: str, prompt: str = "go", **options):
    """One prompt through the official SDK; the run's result."""
    harness = make_harness(model=model, **options)
    return harness.start_session(SID).run(prompt)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------------------
# PreToolUse
# ---------------------------------------------------------------------------


def test_a_published_rm_rf_guard_blocks_the_call_and_tells_the_model(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"PreToolUse": [group("Bash", hook("block-dangerous.sh"))]})
    (workspace / "build").mkdir()
    (workspace / "build" / "keep.txt").write_text("precious")
    result = sdk_run(make_harness, scenario([
        bash("rm -rf build"), bash("echo safe > safe.txt", "toolu_2"), {"text": "done"}]))
    assert (workspace / "build" / "keep.txt").read_text() == "precious"
    assert (workspace / "safe.txt").read_text() == "safe\n"
    texts = tool_texts(result.events)
    assert texts[0] == ("Error: the call was blocked by a PreToolUse hook: "
                        "Blocked: 'rm -rf build' deletes recursively; remove files one by one.")
    runs = hook_runs(result.events, "PreToolUse")
    assert [(r["decision"], r["exitCode"], r["status"], r["callId"], r["toolName"], r["source"]) for r in runs] == [
        ("deny", 2, "exited", "toolu_1", "bash", "home"), ("none", 0, "exited", "toolu_2", "bash", "home")]
    assert runs[0]["reason"].startswith("Blocked: 'rm -rf build'")
    assert all(isinstance(r["durationMs"], int) and r["command"].endswith('block-dangerous.sh"') for r in runs)
    assert result.final_response == "done"


def test_writes_to_env_files_are_denied_by_json_and_other_writes_run(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"PreToolUse": [group("Write|Edit", hook("protect-env.py"))]})
    result = sdk_run(make_harness, scenario([
        write(".env", "KEY=stolen"), write("notes.txt", "fine", "toolu_2"), {"text": "done"}]))
    assert not (workspace / ".env").exists()
    assert (workspace / "notes.txt").read_text() == "fine"
    texts = tool_texts(result.events)
    assert texts[0] == "Error: the call was blocked by a PreToolUse hook: .env holds secrets and is protected"
    assert [r["decision"] for r in hook_runs(result.events, "PreToolUse")] == ["deny", "none"]


def test_the_hook_reads_claude_code_field_names_and_absolute_paths(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"PreToolUse": [group(None, hook("log-event.sh", "pre.jsonl"))]})
    sdk_run(make_harness, scenario([
        call("bash", {"description": "List", "command": "ls", "timeoutMs": 5000}),
        write("sub/a.txt", "x", "toolu_2"),
        call("grep", {"pattern": "x", "include": "*.txt"}, "toolu_3"),
        {"text": "done"}]))
    inputs = read_jsonl(workspace / "pre.jsonl")
    assert [i["tool_name"] for i in inputs] == ["Bash", "Write", "Grep"]
    assert inputs[0]["tool_input"] == {"description": "List", "command": "ls", "timeout": 5000}
    assert inputs[1]["tool_input"] == {"file_path": str(workspace / "sub/a.txt"), "content": "x"}
    assert inputs[2]["tool_input"] == {"pattern": "x", "glob": "*.txt"}
    first = inputs[0]
    assert first["hook_event_name"] == "PreToolUse" and first["tool_use_id"] == "toolu_1"
    assert first["session_id"] == SID and first["cwd"] == str(workspace) and first["turn_id"] == "1"
    assert first["permission_mode"] == "workspace-write"
    assert Path(first["transcript_path"]).is_file() and first["transcript_path"].endswith(".zstd")


def test_updated_input_rewrites_the_command_that_runs(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"PreToolUse": [group("Bash", hook("rewrite-command.py"))]})
    result = sdk_run(make_harness, scenario([bash("echo npm install > used.txt"), {"text": "done"}]))
    assert (workspace / "used.txt").read_text() == "pnpm install\n"
    # The model's call is recorded as it was written; the run is the hook's.
    [recorded] = [e["data"] for e in result.events if e["type"] == "tool/call"]
    assert "echo npm install" in recorded["arguments"]
    assert [r["decision"] for r in hook_runs(result.events)] == ["allow"]


def test_matchers_use_claude_names_dsh_names_regexes_and_codex_names(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"PreToolUse": [
        group("Write", hook("echo claude >> matched.txt")),
        group("write", hook("echo dsh >> matched.txt")),
        group("^Wr.*", hook("echo regex >> matched.txt")),
        group("apply_patch", hook("echo codex >> matched.txt")),
        group("Bash", hook("echo never >> matched.txt")),
        group("Writ", hook("echo partial-name >> matched.txt")),
    ]})
    sdk_run(make_harness, scenario([write("a.txt", "x"), {"text": "done"}]))
    assert sorted((workspace / "matched.txt").read_text().split()) == ["claude", "codex", "dsh", "regex"]


# ---------------------------------------------------------------------------
# ask: the approval path
# ---------------------------------------------------------------------------


class _Result(__import__("pydantic").BaseModel):
    model_config = {"extra": "allow"}


@pytest.mark.parametrize("decision", ["allow-once", "reject"])
def test_ask_goes_to_the_client_through_the_approval_path(make_harness, dsh_home, workspace, scenario, decision):
    install(dsh_home, {"PreToolUse": [group("Bash", hook("ask-for-git-push.sh"))],
                       "Notification": [group("permission_prompt", hook("log-event.sh", "notified.jsonl"))]})
    model = scenario([bash("echo published > publish.txt"), {"text": "done"}])
    harness = make_harness(model=model)
    harness.start()
    harness.client.request("initialize", {"cwd": str(workspace), "provider": "scripted", "model": model,
                                          "clientCapabilities": {"approvals": True}}, response_model=_Result)
    asked = []

    def approver():
        request = harness.client.next_request()
        asked.append(request)
        harness.client.respond(request.id, {"decision": decision, "message": "Not today."})

    thread = threading.Thread(target=approver, daemon=True)
    thread.start()
    result = harness.start_session(SID).run("go")
    thread.join(5)
    [request] = asked
    assert request.method == "approval/request" and request.payload["toolName"] == "bash"
    assert request.payload["reason"] == "PreToolUse hook: this publishes: echo published > publish.txt"
    assert (workspace / "publish.txt").exists() == (decision == "allow-once")
    outcomes = [e["data"]["outcome"] for e in result.events if e["type"] == "approval/decided"]
    assert outcomes == ["approved" if decision == "allow-once" else "rejected"]
    assert [r["decision"] for r in hook_runs(result.events, "PreToolUse")] == ["ask"]
    # The Notification hook heard the client was asked (it runs beside the
    # request, not before it).
    [notified] = read_jsonl(wait_file(workspace / "notified.jsonl"))
    assert notified["notification_type"] == "permission_prompt"
    assert notified["message"] == ("DeepSeek Harness needs your permission to use Bash: "
                                   "PreToolUse hook: this publishes: echo published > publish.txt")


def test_ask_without_an_approver_fails_closed(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"PreToolUse": [group("Bash", hook("ask-for-git-push.sh"))],
                       "Notification": [group(None, hook("log-event.sh", "notified.jsonl"))]})
    result = sdk_run(make_harness, scenario([bash("echo published > publish.txt"), {"text": "done"}]))
    assert not (workspace / "publish.txt").exists()
    assert tool_texts(result.events)[0] == (
        "Error: the call of bash requires approval, but no approval channel is available")
    assert [e["data"]["outcome"] for e in result.events if e["type"] == "approval/decided"] == ["unavailable"]
    # Nobody was asked: no Notification.
    assert not (workspace / "notified.jsonl").exists()


# ---------------------------------------------------------------------------
# PostToolUse, UserPromptSubmit, SessionStart, Stop
# ---------------------------------------------------------------------------


def test_files_are_formatted_after_write_and_edit(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"PostToolUse": [group("Edit|Write", hook("format-after-edit.sh"))]})
    result = sdk_run(make_harness, scenario([
        write("a.py", "x = 1   \ny = 2  "),
        call("read", {"file_path": "a.py"}, "toolu_2"),
        call("edit", {"file_path": "a.py", "old_string": "y = 2", "new_string": "y = 3    "}, "toolu_3"),
        {"text": "done"}]))
    assert (workspace / "a.py").read_text() == "x = 1\ny = 3\n"
    assert (workspace / "format.log").read_text().splitlines() == [f"formatted {workspace / 'a.py'}"] * 2
    assert [r["toolName"] for r in hook_runs(result.events, "PostToolUse")] == ["write", "edit"]


def test_post_tool_use_sees_the_response_and_its_block_reason_reaches_the_model(make_harness, dsh_home, workspace,
                                                                                scenario):
    script = ("python3 -c 'import json,sys; d=json.load(sys.stdin); open(\"post.json\",\"w\").write(json.dumps(d)); "
              "print(json.dumps({\"decision\":\"block\",\"reason\":\"Lint failed: line 1\"}))'")
    install(dsh_home, {"PostToolUse": [group("Bash", hook(script))]})
    result = sdk_run(make_harness, scenario([bash("echo out"), {"text": "done"}]))
    seen = json.loads((workspace / "post.json").read_text())
    assert seen["tool_response"]["stdout"].startswith("out")
    assert seen["tool_response"]["success"] is True and seen["tool_response"]["interrupted"] is False
    notices = [e["data"] for e in result.events if e["type"] == "agent/inbox/spliced"
               and any(m["source"].get("kind") == "hook-context" for m in e["data"].get("inserted", []))]
    assert notices, "the PostToolUse reason was not delivered to the model"
    [message] = notices[0]["inserted"]
    assert message["content"][0]["text"] == "Lint failed: line 1"


def test_prompt_context_reaches_the_provider_and_a_credential_prompt_is_refused(dsh_bin, base_dir, dsh_home,
                                                                             workspace):
    install(dsh_home, {"UserPromptSubmit": [group(None, hook("prompt-context.sh"))],
                       "SessionStart": [group("startup", hook("echo Started fresh."))]})
    server = FakeModel(base_dir / "fake", [{"text": "one"}, {"text": "two"}])
    harness = DeepSeekHarness(dsh_bin=str(dsh_bin), dsh_home=str(dsh_home), cwd=str(workspace),
                              provider="deepseek-official", model="deepseek-v4-flash", base_url=server.base_url,
                              api_key=KEY, request_timeout_seconds=FRAME_TIMEOUT)
    try:
        session = harness.start_session(SID)
        first = session.run("What is the codename?")
        refused = session.run("deploy with SECRET-TOKEN=abc")
        third = session.run("and now?")
    finally:
        harness.close()
        server.close()
    requests = server.requests()
    assert len(requests) == 2, "the refused prompt never reached the model"
    texts = [b.get("text", "") for m in requests[0]["body"]["messages"] for b in m["content"]]
    assert "Started fresh.\n\nProject codename: BLUEBIRD. Current branch: main." in texts
    assert not any("SECRET-TOKEN" in b.get("text", "") for r in requests
                   for m in r["body"]["messages"] for b in m["content"])
    assert first.final_response == "one" and third.final_response == "two"
    assert turn_ends(refused.events) == [{"kind": "blocked"}] and refused.finish_reason == "blocked"
    [blocked] = [r for r in hook_runs(refused.events, "UserPromptSubmit")]
    assert blocked["decision"] == "block"
    assert blocked["reason"] == "Your prompt seems to contain a credential; it was not sent."


def test_a_stop_hook_keeps_the_agent_working_until_the_tests_pass(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"Stop": [group(None, hook("require-tests.py"))]})
    (workspace / "run-tests.sh").write_text("#!/bin/sh\ntouch tests-passed\n")
    (workspace / "run-tests.sh").chmod(0o755)
    result = sdk_run(make_harness, scenario([
        {"text": "All done, I think."}, bash("./run-tests.sh"), {"text": "Tests pass."}]))
    assert (workspace / "tests-passed").exists()
    assert result.final_response == "Tests pass."
    assert turn_ends(result.events) == [{"kind": "completed"}]
    inputs = read_jsonl(workspace / "stop-inputs.jsonl")
    assert [i["stop_hook_active"] for i in inputs] == [False, True]
    assert [r["decision"] for r in hook_runs(result.events, "Stop")] == ["block", "none"]


def test_a_stop_hook_that_always_blocks_is_bounded(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"Stop": [group(None, hook("echo never done >&2; exit 2"))]})
    result = sdk_run(make_harness, scenario([{"text": f"try {i}"} for i in range(12)]))
    assert turn_ends(result.events) == [{"kind": "completed"}]
    assert len(hook_runs(result.events, "Stop")) == 9  # the first stop and 8 blocks in a row
    assert result.final_response == "try 8"


def test_continue_false_stops_the_agent_with_its_reason(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"PreToolUse": [group("Bash", hook(
        """echo '{"continue": false, "stopReason": "Budget exhausted for today"}'"""))]})
    result = sdk_run(make_harness, scenario([
        {"blocks": [{"tool_call": {"id": "toolu_1", "name": "bash",
                                   "arguments": {"description": "a", "command": "touch one"}}},
                    {"tool_call": {"id": "toolu_2", "name": "bash",
                                   "arguments": {"description": "b", "command": "touch two"}}}]},
        {"text": "never"}]))
    assert not (workspace / "one").exists() and not (workspace / "two").exists()
    assert turn_ends(result.events) == [{"kind": "aborted", "reason": {"kind": "hook",
                                                                        "reason": "Budget exhausted for today"}}]
    assert result.finish_reason == "aborted"
    assert all("a hook stopped the agent: Budget exhausted for today" in t for t in tool_texts(result.events))


def test_continue_false_also_stops_the_rest_of_a_batch_of_reads(make_harness, dsh_home, workspace, scenario):
    stop = """echo '{"continue": false, "stopReason": "enough reading"}'"""
    install(dsh_home, {"PreToolUse": [group("Read", hook(stop))]})
    (workspace / "a.txt").write_text("AAA")
    result = sdk_run(make_harness, scenario([
        {"blocks": [{"tool_call": {"id": "toolu_1", "name": "read", "arguments": {"file_path": "a.txt"}}},
                    {"tool_call": {"id": "toolu_2", "name": "read", "arguments": {"file_path": "a.txt"}}}]},
        {"text": "never"}]))
    texts = tool_texts(result.events)
    assert len(texts) == 2 and all("a hook stopped the agent: enough reading" in t for t in texts), texts
    assert len(hook_runs(result.events, "PreToolUse")) == 1


def test_session_start_and_session_end_bracket_the_session(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"SessionStart": [group(None, hook("log-event.sh", "start.jsonl"))],
                       "SessionEnd": [group(None, hook("log-event.sh", "end.jsonl"))]})
    harness = make_harness(model=scenario([{"text": "one"}, {"text": "two"}]))
    session = harness.start_session(SID)
    session.run("first")
    session.run("second")
    harness.close()
    [start] = read_jsonl(workspace / "start.jsonl")
    assert start["source"] == "startup" and start["hook_event_name"] == "SessionStart"
    [end] = read_jsonl(workspace / "end.jsonl")
    assert end["reason"] in ("other", "prompt_input_exit") and end["session_id"] == SID
    # On resume in a new process: SessionStart with source "resume".
    harness = make_harness(model=scenario([{"text": "three"}]))
    harness.resume_session(SID).run("third")
    harness.close()
    assert [s["source"] for s in read_jsonl(workspace / "start.jsonl")] == ["startup", "resume"]


def test_pre_compact_runs_before_a_compaction(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, {"PreCompact": [group("auto", hook("log-event.sh", "compact.jsonl"))]})
    big = "B" + "lorem ipsum dolor sit amet " * 1333
    harness = make_harness(model=scenario([
        {"text": "R1", "usage": {"input_tokens": 100, "output_tokens": 1}},
        {"text": "R2", "usage": {"input_tokens": 30000, "output_tokens": 1}},
        {"text": "summary of the early turns"},
        {"text": "R3"}]), env={"DSH_CONTEXT_WINDOW": "48000", "HOME": str(workspace.parent / "home")})
    session = harness.start_session(SID)
    session.run("first")
    session.run(big)
    third = session.run("third")
    assert any(e["type"] == "compaction/start" for e in third.events)
    [compact] = read_jsonl(workspace / "compact.jsonl")
    assert compact["trigger"] == "auto" and compact["hook_event_name"] == "PreCompact"
    [run_] = hook_runs(third.events, "PreCompact")
    assert run_["decision"] == "none"


def wait_file(path: Path, timeout: float = FRAME_TIMEOUT) -> Path:
    """`path` once a hook has written a whole line to it (the shell creates
    the file before the hook writes)."""
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().endswith("\n")):
        assert time.monotonic() < deadline, f"{path.name} was not written within {timeout}s"
        time.sleep(0.05)
    return path


def test_subagents_run_the_hooks_too(make_harness, dsh_home, workspace, base_dir):
    from interop_support import write_scenario
    install(dsh_home, {"PreToolUse": [group("Bash", hook("block-dangerous.sh"))],
                       "SubagentStop": [group(None, hook("log-event.sh", "subagent-stop.jsonl"))],
                       "Stop": [group(None, hook("log-event.sh", "stop.jsonl"))]})
    (workspace / "data").mkdir()
    model = write_scenario(base_dir, [
        call("subagent", {"description": "Clean", "prompt": "Clean the data directory"}),
        {"text": "Delegated."}, {"text": "Parent saw it."}], agents=[{"when": "Clean the data directory", "replies": [
            bash("rm -rf data"), {"text": "child done"}]}])
    harness = make_harness(model=model)
    harness.start_session(SID).run("go")
    [stopped] = read_jsonl(wait_file(workspace / "subagent-stop.jsonl"))
    assert stopped["hook_event_name"] == "SubagentStop" and stopped["session_id"] != SID
    assert stopped["stop_hook_active"] is False
    assert (workspace / "data").is_dir(), "the child's rm -rf was blocked"
    # The root's own Stop hooks name the root session only.
    assert {s["session_id"] for s in read_jsonl(wait_file(workspace / "stop.jsonl"))} == {SID}


# ---------------------------------------------------------------------------
# Running hooks: failures, bounds, parallelism, isolation, credentials
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("command", "timeout", "status", "decision", "reason_part"), [
    ("sleep 30", 1, "timed-out", "error", "timed out after 1000 ms"),
    ("yes flooding", None, "output-too-large", "error", "wrote more than 262144 bytes"),
    ("echo crashed >&2; kill -SEGV $$", None, "signaled", "error", "was ended by a signal: crashed"),
    ("echo oops >&2; exit 1", None, "exited", "error", "exited with code 1: oops"),
    ("echo '{not json'", None, "exited", "none", "not a JSON object; it was read as text"),
    ("/nonexistent/hook.sh", None, "exited", "error", "exited with code 127"),
])
def test_a_failing_hook_is_a_bounded_error_and_the_call_runs(make_harness, dsh_home, workspace, scenario,
                                                             command, timeout, status, decision, reason_part):
    extra = {"timeout": timeout} if timeout else {}
    install(dsh_home, {"PreToolUse": [group("Bash", hook(command, **extra))]})
    started = time.monotonic()
    result = sdk_run(make_harness, scenario([bash("touch ran.txt"), {"text": "done"}]))
    assert (workspace / "ran.txt").exists(), "a failing hook does not block (as in Claude Code)"
    assert time.monotonic() - started < RUN_TIMEOUT
    [run_] = hook_runs(result.events, "PreToolUse")
    assert (run_["status"], run_["decision"]) == (status, decision)
    assert reason_part in (run_.get("reason") or run_.get("message") or "")
    assert result.final_response == "done"


def test_hooks_of_one_event_run_in_parallel(make_harness, dsh_home, workspace, scenario):
    # Each waits for the other's file: run one after the other, both would time out.
    wait_for = ("touch {mine}; for i in $(seq 100); do [ -e {other} ] && exit 0; sleep 0.05; done; "
                "echo alone >&2; exit 1")
    install(dsh_home, {"PreToolUse": [group("Bash", hook(wait_for.format(mine="a", other="b")),
                                            hook(wait_for.format(mine="b", other="a")))]})
    result = sdk_run(make_harness, scenario([bash("true"), {"text": "done"}]))
    assert [(r["exitCode"], r["decision"]) for r in hook_runs(result.events)] == [(0, "none"), (0, "none")]


def test_a_hanging_hook_never_stalls_another_session(make_raw, dsh_home, workspace, scenario):
    install(dsh_home, {"PreToolUse": [group("Bash", hook(
        "grep -q slow; [ $? -ne 0 ] && exit 0; while [ ! -e release ]; do sleep 0.05; done"))]})
    raw = make_raw()
    raw.initialize(workspace, model=scenario([bash("echo slow"), {"text": "done"}]))
    raw.prompt("slow-session", "go")
    raw.wait_for(lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == "tool/call",
                 what="the slow call")
    raw.initialize(workspace, model=scenario([bash("echo quick > quick.txt"), {"text": "quick done"}]))
    raw.prompt("quick-session", "go")
    raw.status("quick-session", "idle")
    assert (workspace / "quick.txt").exists()
    assert not [e for e in session_events(raw.frames, "slow-session") if e["type"] == "turn/end"]
    (workspace / "release").touch()
    raw.status("slow-session", "idle")


def test_hooks_never_see_the_provider_key_unless_passed_by_name(dsh_bin, base_dir, dsh_home, workspace):
    probe = 'echo "${DEEPSEEK_API_KEY:-absent}" >> keys.txt'
    install(dsh_home, {"PreToolUse": [group("Bash", hook(probe), hook(probe + " # passed",
                                                                      passEnv=["DEEPSEEK_API_KEY"]))]})
    server = FakeModel(base_dir / "fake", [bash("true"), {"text": "done"}])
    harness = DeepSeekHarness(dsh_bin=str(dsh_bin), dsh_home=str(dsh_home), cwd=str(workspace),
                              provider="deepseek-official", model="deepseek-v4-flash", base_url=server.base_url,
                              api_key=KEY, request_timeout_seconds=FRAME_TIMEOUT)
    try:
        harness.start_session(SID).run("go")
    finally:
        harness.close()
        server.close()
    assert sorted((workspace / "keys.txt").read_text().split()) == sorted(["absent", KEY])


# ---------------------------------------------------------------------------
# Sources and trust
# ---------------------------------------------------------------------------


def project_files(workspace: Path) -> None:
    marker = 'echo "$DSH_HOOK_EVENT {source}" >> project-hooks.txt'
    (workspace / ".claude").mkdir()
    (workspace / ".codex").mkdir()
    for path, source in ((".claude/settings.json", "claude"), (".claude/settings.local.json", "claude-local"),
                         (".codex/hooks.json", "codex")):
        (workspace / path).write_text(json.dumps(
            {"permissions": {}, "hooks": {"PreToolUse": [group("Bash", hook(marker.format(source=source)))]}}))


def test_project_hooks_are_ignored_unless_the_client_trusts_them(make_raw, workspace, scenario):
    project_files(workspace)
    model = scenario([bash("true"), {"text": "done"}, bash("true"), {"text": "done"}])
    raw = make_raw()
    raw.initialize(workspace, model=model)
    raw.prompt("untrusted", "go")
    raw.status("untrusted", "idle")
    assert not (workspace / "project-hooks.txt").exists()
    assert not [e for e in session_events(raw.frames, "untrusted") if e["type"].startswith("dsh/")]
    raw.initialize(workspace, model=model, projectHooks=True)
    raw.prompt("trusted", "go")
    raw.status("trusted", "idle")
    # The three run at once: their lines come in any order.
    assert sorted((workspace / "project-hooks.txt").read_text().splitlines()) == [
        "PreToolUse claude", "PreToolUse claude-local", "PreToolUse codex"]
    [loaded] = [e["data"] for e in session_events(raw.frames, "trusted") if e["type"] == "dsh/hooks-loaded"]
    assert [(s["kind"], s["hooks"]) for s in loaded["sources"]] == [
        ("project-claude", 1), ("project-claude-local", 1), ("project-codex", 1)]


def test_the_launch_trusts_project_hooks_with_an_environment_variable(make_raw, dsh_home, home, workspace, scenario):
    project_files(workspace)
    raw = make_raw(env=clean_env(dsh_home, home, DSH_TRUST_PROJECT_HOOKS="1"))
    raw.initialize(workspace, model=scenario([bash("true"), {"text": "done"}]))
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    assert len((workspace / "project-hooks.txt").read_text().splitlines()) == 3


def test_sources_layer_in_order_and_each_is_named(make_raw, dsh_home, home, base_dir, workspace, scenario):
    install(dsh_home, {"PreToolUse": [group("Bash", hook("echo home >> order.txt"))],
                       "PermissionRequest": [group(None, hook("true"))]})
    patch = base_dir / "hooks.yml"
    patch.write_text("hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n"
                     "        - type: command\n          command: echo patch >> order.txt\n")
    raw = make_raw(args=["--profile", "sdk", "--patch", str(patch)])
    raw.initialize(workspace, model=scenario([bash("true"), {"text": "done"}]), hooks={
        "PreToolUse": [group("Bash", hook("echo initialize >> order.txt"),
                             {"type": "prompt", "prompt": "Is this safe?"})]})
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    assert sorted((workspace / "order.txt").read_text().split()) == ["home", "initialize", "patch"]
    [loaded] = [e for e in session_events(raw.frames, SID) if e["type"] == "dsh/hooks-loaded"]
    assert loaded["ignorable"] is True
    assert [(s["kind"], s["hooks"], s["ignored"]) for s in loaded["data"]["sources"]] == [
        ("home", 1, ["event PermissionRequest"]), ("patch", 1, []),
        ("initialize", 1, ["PreToolUse hook of type prompt"])]
    assert loaded["data"]["sources"][0]["path"] == str(dsh_home / "hooks.json")


@pytest.mark.parametrize(("hooks", "message"), [
    ([], "initialize hooks: hooks must be an object"),
    ({"Stop": [{"hooks": [{"type": "command"}]}]},
     "initialize hooks: hooks.Stop[0].hooks[0].command must be a non-empty string"),
    ({"PreToolUse": [{"matcher": "(", "hooks": []}]},
     "initialize hooks: hooks.PreToolUse[0].matcher is not a valid regular expression"),
])
def test_bad_hooks_in_initialize_are_refused_clearly(make_raw, workspace, hooks, message):
    raw = make_raw()
    error = raw.error("initialize", {"cwd": str(workspace), "provider": "scripted", "model": "echo",
                                     "hooks": hooks})
    assert error["message"].startswith(message), error
    assert raw.error("initialize", {"cwd": str(workspace), "provider": "scripted", "model": "echo",
                                    "projectHooks": "yes"})["message"] == "initialize projectHooks must be a boolean"


def test_a_broken_hooks_file_in_dsh_home_stops_the_launch(dsh_bin, dsh_home, home, workspace):
    (dsh_home / "hooks.json").write_text('{"hooks": {"Stop": [{"hooks": [{"type": "command", "timeout": -1, '
                                         '"command": "x"}]}]}}')
    done = subprocess.run([str(dsh_bin), "--profile", "sdk"], input="", capture_output=True, text=True,
                          env=clean_env(dsh_home, home), cwd=workspace, timeout=FRAME_TIMEOUT)
    assert done.returncode == 1
    assert (f"Error: dsh: hooks {dsh_home / 'hooks.json'}: hooks.Stop[0].hooks[0].timeout must be a number of "
            "seconds above 0 and at most 86400") in done.stderr


def test_a_broken_project_file_is_reported_and_the_others_run(make_raw, workspace, scenario):
    project_files(workspace)
    (workspace / ".claude" / "settings.local.json").write_text("{broken")
    raw = make_raw()
    raw.initialize(workspace, model=scenario([bash("true"), {"text": "done"}]), projectHooks=True)
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    assert sorted((workspace / "project-hooks.txt").read_text().splitlines()) == [
        "PreToolUse claude", "PreToolUse codex"]
    [loaded] = [e["data"] for e in session_events(raw.frames, SID) if e["type"] == "dsh/hooks-loaded"]
    broken = [s for s in loaded["sources"] if s.get("error")]
    assert [s["kind"] for s in broken] == ["project-claude-local"] and "not JSON" in broken[0]["error"]


def test_a_broken_project_file_alone_is_still_reported_in_the_log(make_raw, workspace, scenario):
    (workspace / ".codex").mkdir()
    (workspace / ".codex" / "hooks.json").write_text('{"hooks": {"Stop": "not a list"}}')
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "done"}]), projectHooks=True)
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    [loaded] = [e["data"] for e in session_events(raw.frames, SID) if e["type"] == "dsh/hooks-loaded"]
    assert loaded["sources"] == [{"kind": "project-codex", "path": str(workspace / ".codex" / "hooks.json"),
                                  "hooks": 0, "ignored": [], "error": "hooks.Stop must be an array"}]


# ---------------------------------------------------------------------------
# The record: on resume, across runtimes
# ---------------------------------------------------------------------------


def test_every_run_is_in_the_log_and_shows_on_resume(make_raw, dsh_home, workspace, scenario):
    install(dsh_home, {"PreToolUse": [group("Bash", hook("block-dangerous.sh"))]})
    raw = make_raw()
    raw.initialize(workspace, model=scenario([bash("rm -rf /tmp/x"), {"text": "done"}]))
    raw.prompt(SID, "go")
    raw.status(SID, "idle")
    raw.shutdown()
    reader = make_raw()
    reader.initialize(workspace)
    page = reader.result("session/events", {"sessionId": SID})
    runs = [e for e in page["events"] if e["type"] == "dsh/hook-run"]
    assert [(e["data"]["decision"], e["data"]["exitCode"], e["ignorable"]) for e in runs] == [("deny", 2, True)]
    assert "stdout" not in runs[0]["data"] and "stderr" not in runs[0]["data"]


def test_the_official_runtime_resumes_a_session_with_hook_records(official_bin, dsh_bin, base_dir):  # noqa: F811
    dsh_home = base_dir / "shared_home"
    dsh_home.mkdir()
    ws = base_dir / "ws"
    ws.mkdir()
    # The log holds hook records, a hook's context message, a refused prompt
    # (turn/end blocked) and a PostToolUse notice.
    install(dsh_home, {"PreToolUse": [group("Bash", hook("block-dangerous.sh"))],
                       "PostToolUse": [group("Bash", hook('echo \'{"decision":"block","reason":"lint it"}\''))],
                       "UserPromptSubmit": [group(None, hook("prompt-context.sh"))]})
    server = FakeModel(base_dir / "fake", [bash("rm -rf stuff"), bash("echo ok", "toolu_2"), {"text": "first"},
                                           {"text": "second"}])
    try:
        for binary, prompt in ((dsh_bin, "one"), (dsh_bin, "SECRET-TOKEN"), (official_bin, "two")):
            harness = DeepSeekHarness(dsh_bin=str(binary), dsh_home=str(dsh_home), cwd=str(ws),
                                      provider="deepseek-official", model="deepseek-v4-flash",
                                      base_url=server.base_url, api_key=KEY, request_timeout_seconds=FRAME_TIMEOUT,
                                      env={"HOME": str(base_dir / "home")})
            try:
                session = harness.start_session(SID) if prompt == "one" else harness.resume_session(SID)
                result = session.run(prompt)
            finally:
                harness.close()
    finally:
        server.close()
    assert result.final_response == "second"
    # The official runtime sent the history on: the hook's context included.
    texts = [b.get("text", "") for m in server.requests()[-1]["body"]["messages"] for b in m["content"]
             if isinstance(b, dict)]
    assert any("BLUEBIRD" in t for t in texts) and any(t == "lint it" for t in texts)


# ---------------------------------------------------------------------------
# The same scripts through dsh headless and dsh acp
# ---------------------------------------------------------------------------

GUARDS = {"PreToolUse": [group("Bash", hook("block-dangerous.sh")), group("Write|Edit", hook("protect-env.py"))]}
GUARDED = [bash("rm -rf build"), write(".env", "KEY=x", "toolu_2"), write("ok.txt", "fine", "toolu_3"),
           {"text": "done"}]
BLOCKED = ["Error: the call was blocked by a PreToolUse hook: Blocked: 'rm -rf build' deletes recursively; "
           "remove files one by one.",
           "Error: the call was blocked by a PreToolUse hook: .env holds secrets and is protected"]


def guarded_workspace(workspace: Path) -> None:
    (workspace / "build").mkdir()
    (workspace / "build" / "keep.txt").write_text("precious")


def assert_guarded(workspace: Path) -> None:
    assert (workspace / "build" / "keep.txt").exists()
    assert not (workspace / ".env").exists()
    assert (workspace / "ok.txt").read_text() == "fine"


def test_the_same_scripts_decide_the_same_in_the_sdk_profile(make_harness, dsh_home, workspace, scenario):
    install(dsh_home, GUARDS)
    guarded_workspace(workspace)
    result = sdk_run(make_harness, scenario(GUARDED))
    assert tool_texts(result.events)[:2] == BLOCKED
    assert_guarded(workspace)


def test_the_same_scripts_decide_the_same_in_dsh_headless(dsh_bin, dsh_home, home, workspace, scenario):
    install(dsh_home, GUARDS)
    guarded_workspace(workspace)
    done = subprocess.run([str(dsh_bin), "headless", "--json", "--model", scenario(GUARDED), "clean up"],
                          capture_output=True, text=True, env=clean_env(dsh_home, home), cwd=workspace,
                          timeout=RUN_TIMEOUT)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    results = [r["result"] for r in records if r["type"] == "tool_result"]
    assert results[:2] == BLOCKED
    assert records[-1] == {"type": "final", "text": "done"}
    assert_guarded(workspace)


def test_the_same_scripts_decide_the_same_in_dsh_acp(launch, dsh_home, workspace, scenario):  # noqa: F811
    install(dsh_home, GUARDS)
    guarded_workspace(workspace)
    model = scenario(GUARDED)

    async def body():
        async with launch(model=model) as agent:
            session = await agent.new_session()
            assert await agent.prompt(session, "clean up") == "end_turn"
            updates = agent.updates(session)
            failed = [u for u in updates if u.get("sessionUpdate") == "tool_call_update"
                      and u.get("status") == "failed"]
            texts = ["".join(c["content"]["text"] for c in u.get("content", []) if c.get("type") == "content")
                     for u in failed]
            assert texts == BLOCKED

    run(body())
    assert_guarded(workspace)


def test_an_ask_hook_becomes_an_acp_permission_request(launch, dsh_home, workspace, scenario):  # noqa: F811
    install(dsh_home, {"PreToolUse": [group("Bash", hook("ask-for-git-push.sh"))]})
    model = scenario([bash("echo published > publish.txt"), {"text": "done"}])

    async def body():
        async with launch(model=model) as agent:
            agent.client.on_permission = choose("allow_once")
            session = await agent.new_session()
            assert await agent.prompt(session, "publish") == "end_turn"
            [request] = agent.permission_requests(session)
            assert request["toolCall"]["toolCallId"] == "toolu_1"

    run(body())
    assert (workspace / "publish.txt").read_text() == "published\n"


def test_a_refused_prompt_ends_the_acp_turn_as_a_refusal(launch, dsh_home, workspace, scenario):  # noqa: F811
    install(dsh_home, {"UserPromptSubmit": [group(None, hook("prompt-context.sh"))]})
    model = scenario([{"text": "answered"}])

    async def body():
        async with launch(model=model) as agent:
            session = await agent.new_session()
            assert await agent.prompt(session, "use SECRET-TOKEN=1") == "refusal"
            assert await agent.prompt(session, "a fine prompt") == "end_turn"

    run(body())
