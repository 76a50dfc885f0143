"""Durable sessions: the on-disk format, session/resume with repair, locks,
corrupt files, crash safety (SIGKILL), and portability both ways between
dsh and the official runtime."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from pathlib import Path

import pytest
import zstandard
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT, RawClient, clean_env, first, types, write_scenario

KEY = "sk-sessions-0000"


def session_dir(dsh_home: Path, session_id: str) -> Path:
    [found] = list((Path(dsh_home) / "sessions").glob(f"--*--/{session_id}"))
    return found


def log_file(dsh_home: Path, session_id: str) -> Path:
    folder = session_dir(dsh_home, session_id)
    [found] = [p for p in folder.iterdir() if p.name.startswith("session.v4.jsonl")]
    return found


def read_log(path: Path) -> list[dict]:
    data = path.read_bytes()
    if path.suffix == ".zstd":
        reader = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True)
        data = reader.read()
    return [json.loads(line) for line in data.decode("utf-8").splitlines() if line]


def digest(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(folder).rglob("*")) if p.is_file()}


def echo_harness(dsh_bin, dsh_home, workspace, profile="sdk", model="echo", **kw) -> DeepSeekHarness:
    return DeepSeekHarness(dsh_bin=str(dsh_bin), dsh_home=str(dsh_home), cwd=str(workspace), provider="scripted",
                           model=model, profile=profile, request_timeout_seconds=FRAME_TIMEOUT, **kw)


def test_layout_modes_and_the_header(dsh_bin, dsh_home, workspace):
    with echo_harness(dsh_bin, dsh_home, workspace) as h:
        h.start_session("session-layout").run("Say hi")
    folder = session_dir(dsh_home, "session-layout")
    key = "--" + str(workspace).strip("/").replace("/", "-") + "--"
    assert folder.parent.name == key
    assert sorted(p.name for p in folder.iterdir()) == ["session.lock", "session.v4.jsonl.zstd"]
    assert (folder / "session.lock").stat().st_size == 0
    assert oct((folder / "session.v4.jsonl.zstd").stat().st_mode & 0o777) == "0o600"
    for d in (folder, folder.parent, Path(dsh_home) / "sessions"):
        assert oct(d.stat().st_mode & 0o777) == "0o700", d
    events = read_log(folder / "session.v4.jsonl.zstd")
    header = events[0]
    assert list(header) == ["type", "version", "id", "createdAt", "cwd", "isSeeded", "delegationDepth"]
    assert header["type"] == "session" and header["version"] == 4 and header["cwd"] == str(workspace)
    assert [e["seq"] for e in events[1:]] == list(range(len(events) - 1))
    assert events[-1]["type"] == "turn/end"


def test_sdk_minimal_writes_plain_jsonl(dsh_bin, dsh_home, workspace):
    with echo_harness(dsh_bin, dsh_home, workspace, profile="sdk-minimal") as h:
        h.start_session("s-min").run("hi")
    path = log_file(dsh_home, "s-min")
    assert path.name == "session.v4.jsonl"
    events = read_log(path)
    assert events[1]["type"] == "agent/inbox/spliced" and events[1]["seq"] == 0


def test_events_on_disk_are_the_events_on_the_wire(dsh_bin, dsh_home, workspace):
    with echo_harness(dsh_bin, dsh_home, workspace) as h:
        result = h.start_session("s-same").run("same bytes")
    on_disk = {e["seq"]: e for e in read_log(log_file(dsh_home, "s-same"))[1:]}
    for event in result.events:
        assert on_disk[event["seq"]] == event


def test_resume_continues_the_session_and_replays_history(fake_model, dsh_bin, dsh_home, workspace):
    server = fake_model([{"text": "First answer."}, {"text": "Second answer."}])
    kw = dict(dsh_bin=str(dsh_bin), dsh_home=str(dsh_home), cwd=str(workspace), base_url=server.base_url,
              api_key=KEY, request_timeout_seconds=FRAME_TIMEOUT)
    with DeepSeekHarness(**kw) as h:
        assert h.start_session("session-resume").run("First question").final_response == "First answer."
    with DeepSeekHarness(**kw) as h:
        with pytest.raises(Exception, match='session "session-resume" already exists'):
            h.start_session("session-resume").run("Not allowed")
    with DeepSeekHarness(**kw) as h:
        session = h.resume_session("session-resume")
        result = session.run("Second question")
        assert result.final_response == "Second answer."
        assert types(result.events) == ["agent/inbox/spliced", "turn/start", "agent/inbox/spliced", "step/start",
                                        "user/message", "request/header", "assistant/message", "step/end", "turn/end"]
        assert result.events[0]["seq"] == 17  # 0..15 turn 1, 16 = session/end-seed
        assert first(result.events, "turn/start")["data"]["turn"] == 2
        assert first(result.events, "request/header")["data"]["reason"] == "resume"
        assert "session.event" in [n.method for n in result.notifications]
        with pytest.raises(Exception, match="SDK session is already open or opening: session-resume"):
            h.resume_session("session-resume")
        with pytest.raises(Exception, match='session "never-created" not found'):
            h.resume_session("never-created")
    messages = server.requests()[1]["body"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[0]["content"][0] == {"type": "text", "text": "First question"}
    assert messages[1]["content"] == [{"type": "text", "text": "First answer."}]
    assert messages[2]["content"] == [{"type": "text", "text": "Second question"}]
    events = read_log(log_file(dsh_home, "session-resume"))
    assert events[17] == {"type": "session/end-seed", "seq": 16, "time": events[17]["time"], "data": {}}


def test_resume_errors_create_and_change_nothing(make_raw, dsh_home, workspace):
    raw = make_raw()
    raw.initialize(workspace)
    assert raw.error("session/resume", {})["message"] == "session/resume requires a non-empty sessionId string"
    assert raw.error("session/resume", {"sessionId": ""})["message"] == "session/resume requires a non-empty sessionId string"
    assert raw.error("session/resume", {"sessionId": "ghost"})["message"] == 'session "ghost" not found'
    assert not (Path(dsh_home) / "sessions").exists()


def corrupt_case(dsh_bin, dsh_home, workspace, mutate):
    with echo_harness(dsh_bin, dsh_home, workspace, profile="sdk-minimal") as h:
        h.start_session("s-bad").run("hi")
    path = log_file(dsh_home, "s-bad")
    mutate(path)
    before = digest(Path(dsh_home) / "sessions")
    with echo_harness(dsh_bin, dsh_home, workspace, profile="sdk-minimal") as h:
        with pytest.raises(Exception) as raised:
            h.resume_session("s-bad")
    assert digest(Path(dsh_home) / "sessions") == before
    return str(raised.value)


def test_a_corrupt_middle_line_is_refused(dsh_bin, dsh_home, workspace):
    def mutate(path):
        lines = path.read_text().splitlines(keepends=True)
        lines[5] = '{"type":"turn/st\n'
        path.write_text("".join(lines))
    assert "corrupt session log" in corrupt_case(dsh_bin, dsh_home, workspace, mutate)


def test_an_unsupported_format_version_is_refused(dsh_bin, dsh_home, workspace):
    def mutate(path):
        lines = path.read_text().splitlines(keepends=True)
        lines[0] = lines[0].replace('"version":4', '"version":3')
        path.write_text("".join(lines))
    assert "session format version 3 is not supported" in corrupt_case(dsh_bin, dsh_home, workspace, mutate)


def test_a_session_locked_by_another_live_process_is_refused(make_raw, dsh_home, workspace, dsh_bin):
    with echo_harness(dsh_bin, dsh_home, workspace) as h:
        h.start_session("s-locked").run("hi")
    owner = make_raw()
    owner.initialize(workspace)
    assert owner.result("session/resume", {"sessionId": "s-locked"}) == {}
    other = make_raw()
    other.initialize(workspace)
    message = other.error("session/resume", {"sessionId": "s-locked"})["message"]
    assert message == 'session "s-locked" is already owned by an active write handle'
    owner.shutdown()
    assert other.result("session/resume", {"sessionId": "s-locked"}) == {}


def logged(dsh_home, session_id, event_type) -> bool:
    """Whether the session's log on disk already holds an event of this type."""
    try:
        return any(e.get("type") == event_type for e in read_log(log_file(dsh_home, session_id)))
    except (ValueError, OSError, zstandard.ZstdError):
        return False  # not written yet, or caught mid-write


def run_until_killed(make_raw, workspace, scenario_path, profile, wait_for_type, on_disk_home=None):
    raw = make_raw(profile=profile)
    raw.initialize(workspace, model=scenario_path)
    raw.prompt("s-crash", "please work")
    raw.wait_for(lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == wait_for_type,
                 what=wait_for_type)
    if on_disk_home is not None:
        deadline = time.monotonic() + FRAME_TIMEOUT
        while not logged(on_disk_home, "s-crash", wait_for_type):
            assert time.monotonic() < deadline, f"{wait_for_type} never reached the disk"
            time.sleep(0.01)
    raw.proc.send_signal(signal.SIGKILL)
    raw.wait_exit()
    return raw


@pytest.mark.parametrize("profile", ["sdk", "sdk-minimal"])
def test_sigkill_while_the_model_streams_then_resume_repairs(make_raw, base_dir, dsh_home, workspace, profile):
    scenario = write_scenario(base_dir, [{"text": "slow", "delay_ms": 30000}, {"text": "after"}])
    run_until_killed(make_raw, workspace, scenario, profile, "session/title" if profile == "sdk" else "request/context")
    path = log_file(dsh_home, "s-crash")
    before = read_log(path)
    # The kill lands after the pre-step barrier (step/start) or after the
    # barrier before the model request (the last context event).
    assert before[-1]["type"] in ("step/start", "session/title", "request/context")
    raw = make_raw(profile=profile)
    raw.initialize(workspace, model=write_scenario(base_dir, [{"text": "resumed fine"}]))
    assert raw.result("session/resume", {"sessionId": "s-crash"}) == {}
    after = read_log(path)
    assert after[:len(before)] == before
    tail = after[len(before):]
    assert [e["type"] for e in tail] == ["step/end", "turn/end", "session/end-seed"]
    assert tail[1]["data"] == {"turn": 1, "reason": {"kind": "interrupted"}}
    assert tail[0]["time"] == tail[1]["time"] == before[-1]["time"]
    start = len(raw.frames)
    raw.prompt("s-crash", "again")
    raw.status("s-crash", "idle", start=start)
    events = [f["params"]["event"] for f in raw.frames[start:] if f.get("method") == "session.event"]
    assert first(events, "turn/start")["data"]["turn"] == 2
    assert first(events, "assistant/message")["data"]["message"]["content"][0]["text"] == "resumed fine"


def cut_log_after(path: Path, predicate) -> list[dict]:
    """Rewrite a plain log so it ends at the first event matching predicate."""
    events = read_log(path)
    end = next(i for i, e in enumerate(events) if i > 0 and predicate(e)) + 1
    path.write_text("".join(json.dumps(e, separators=(",", ":"), ensure_ascii=False) + "\n" for e in events[:end]))
    return events[:end]


@pytest.mark.parametrize("cut", ["after tool/call", "before tool/call"])
def test_an_interrupted_tool_call_gets_a_synthetic_result(dsh_bin, dsh_home, workspace, base_dir, cut):
    scenario = write_scenario(base_dir, [
        {"blocks": [{"tool_call": {"id": "call_x", "name": "no_such_tool", "arguments": {}}}]},
        {"text": "done"},
    ])
    with echo_harness(dsh_bin, dsh_home, workspace, profile="sdk-minimal", model=scenario) as h:
        h.start_session("s-tool").run("go")
    path = log_file(dsh_home, "s-tool")
    if cut == "after tool/call":
        kept = cut_log_after(path, lambda e: e["type"] == "tool/call")
    else:
        kept = cut_log_after(path, lambda e: e["type"] == "assistant/message")
    with echo_harness(dsh_bin, dsh_home, workspace, profile="sdk-minimal") as h:
        h.resume_session("s-tool")
    tail = read_log(path)[len(kept):]
    assert [e["type"] for e in tail] == ["tool/result", "step/end", "turn/end", "session/end-seed"]
    result = tail[0]
    assert result["data"]["message"]["isError"] is True
    assert result["data"]["message"]["id"] == f"interrupted-tool-result-call_x-{result['seq']}"
    if cut == "after tool/call":
        assert result["data"]["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
        assert result["sourceEventSeqs"] == [kept[-1]["seq"]]
    else:
        assert result["data"]["error"] == {"name": "ToolNotStartedError", "code": "TOOL_NOT_STARTED"}
        assert "sourceEventSeqs" not in result


@pytest.mark.parametrize("profile", ["sdk", "sdk-minimal"])
def test_a_torn_last_write_loses_nothing_before_it(dsh_bin, dsh_home, workspace, profile):
    with echo_harness(dsh_bin, dsh_home, workspace, profile=profile) as h:
        h.start_session("s-torn").run("one")
    path = log_file(dsh_home, "s-torn")
    complete = read_log(path)
    with echo_harness(dsh_bin, dsh_home, workspace, profile=profile) as h:
        h.resume_session("s-torn").run("two")
    full = path.read_bytes()
    for cut in (1, 7, 40):
        path.write_bytes(full[:-cut])  # the last write is torn
        with echo_harness(dsh_bin, dsh_home, workspace, profile=profile) as h:
            result = h.resume_session("s-torn").run("three")
            assert result.finish_reason == "completed"
        events = read_log(path)
        assert events[:len(complete)] == complete
        assert [e["seq"] for e in events[1:]] == list(range(len(events) - 1))
        path.write_bytes(full)


def test_shutdown_cancels_pending_prompts_and_aborts_the_running_turn(make_raw, base_dir, dsh_home, workspace):
    raw = make_raw()
    raw.initialize(workspace, model=write_scenario(base_dir, [{"text": "slow", "delay_ms": 30000}]))
    raw.prompt("s-busy", "first")
    raw.prompt("s-busy", "queued")
    raw.wait_for(lambda f: f.get("method") == "session.event" and f["params"]["event"]["type"] == "session/title")
    sent = len(raw.frames)
    assert raw.shutdown() == 0
    assert all(f.get("method") != "session.event" for f in raw.frames[sent:])  # disposal is not sent
    tail = read_log(log_file(dsh_home, "s-busy"))[-3:]
    assert [e["type"] for e in tail] == ["step/end", "turn/end", "agent/inbox/spliced"]
    assert tail[1]["data"]["reason"] == {"kind": "aborted", "reason": {"kind": "disposed"}}
    assert tail[2]["data"] == {"target": "next-turn", "start": 0, "removedCount": 1, "inserted": [], "outcome": "canceled"}


@pytest.fixture(scope="module")
def official():
    try:
        import deepseek_harness_runtime
    except ImportError:
        pytest.fail("deepseek-harness-runtime-bin==0.2.1rc2 is not installed in the test venv")
    return Path(deepseek_harness_runtime.__file__).parent / "runtime" / "deepseek-harness-sdk-runtime-linux-x64"


def http_harness(binary, server, dsh_home, workspace, home):
    return DeepSeekHarness(dsh_bin=str(binary), dsh_home=str(dsh_home), cwd=str(workspace), base_url=server.base_url,
                           api_key=KEY, request_timeout_seconds=FRAME_TIMEOUT, env={"HOME": str(home)})


@pytest.mark.parametrize("direction", ["official-to-ours", "ours-to-official"])
def test_sessions_move_between_runtimes(direction, official, dsh_bin, fake_model, dsh_home, workspace, home):
    first_bin, second_bin = (official, dsh_bin) if direction == "official-to-ours" else (dsh_bin, official)
    home.mkdir(exist_ok=True)
    server = fake_model([{"text": "First answer."}, {"text": "Second answer."}])
    with http_harness(first_bin, server, dsh_home, workspace, home) as h:
        assert h.start_session("s-port").run("First question").final_response == "First answer."
    with http_harness(second_bin, server, dsh_home, workspace, home) as h:
        result = h.resume_session("s-port").run("Second question")
    assert result.final_response == "Second answer." and result.finish_reason == "completed"
    assert first(result.events, "turn/start")["data"]["turn"] == 2
    assert first(result.events, "request/header")["data"]["reason"] == "resume"
    messages = server.requests()[1]["body"]["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[1]["content"] == [{"type": "text", "text": "First answer."}]
    events = read_log(log_file(dsh_home, "s-port"))
    assert [e["seq"] for e in events[1:]] == list(range(len(events) - 1))
    assert "session/end-seed" in [e["type"] for e in events]


@pytest.mark.parametrize("profile", ["sdk", "sdk-minimal"])
def test_sigkill_during_a_tool_call_then_resume_repairs(make_raw, base_dir, dsh_home, workspace, profile):
    command = {"command": "sleep 7830.5"} if profile == "sdk-minimal" else {"description": "wait", "command": "sleep 7830.5"}
    scenario = write_scenario(base_dir, [{"blocks": [{"tool_call": {"id": "call_slow", "name": "bash", "arguments": command}}]}])
    run_until_killed(make_raw, workspace, scenario, profile, "tool/call", on_disk_home=dsh_home)
    path = log_file(dsh_home, "s-crash")
    before = read_log(path)
    # The call is on disk before the tool runs (a barrier); every event is
    # written before it is notified, so the command's `job/registered` may
    # be there too if it came before the kill.
    call = next(e for e in before if e["type"] == "tool/call")
    assert [e["type"] for e in before[before.index(call):]] in (["tool/call"], ["tool/call", "job/registered"])
    raw = make_raw(profile=profile)
    # A resumed session's scripted replies continue after the one already
    # in its history.
    raw.initialize(workspace, model=write_scenario(base_dir, [{"text": "unused"}, {"text": "recovered"}]))
    assert raw.result("session/resume", {"sessionId": "s-crash"}) == {}
    tail = read_log(path)[len(before):]
    assert [e["type"] for e in tail] == ["tool/result", "step/end", "turn/end", "session/end-seed"]
    assert tail[0]["data"]["error"] == {"name": "ToolOutcomeUnknownError", "code": "TOOL_OUTCOME_UNKNOWN"}
    assert tail[0]["sourceEventSeqs"] == [call["seq"]]
    start = len(raw.frames)
    raw.prompt("s-crash", "again")
    raw.status("s-crash", "idle", start=start)
    events = [f["params"]["event"] for f in raw.frames[start:] if f.get("method") == "session.event"]
    assert first(events, "assistant/message")["data"]["message"]["content"][0]["text"] == "recovered"


def test_sigkill_between_turns_loses_nothing(make_raw, base_dir, dsh_home, workspace):
    raw = make_raw()
    raw.initialize(workspace)
    start = len(raw.frames)
    raw.prompt("s-quiet", "first")
    raw.status("s-quiet", "idle", start=start)
    sent = [f["params"]["event"] for f in raw.frames if f.get("method") == "session.event"]
    raw.proc.send_signal(signal.SIGKILL)
    raw.wait_exit()
    stored = read_log(log_file(dsh_home, "s-quiet"))[1:]
    assert stored == sent  # everything reported reached the disk
    raw = make_raw()
    raw.initialize(workspace)
    assert raw.result("session/resume", {"sessionId": "s-quiet"}) == {}
    tail = read_log(log_file(dsh_home, "s-quiet"))[1 + len(sent):]
    assert [e["type"] for e in tail] == ["session/end-seed"]  # nothing to repair
