"""Tools through the real binary: rosters, sandbox modes, process hygiene
(no process outlives shutdown or a SIGKILLed runtime) and a protocol
channel that tool output cannot corrupt."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from pathlib import Path

import pytest

from interop_support import FRAME_TIMEOUT, first, write_scenario


def call(name, arguments, id="call_1"):
    return {"blocks": [{"tool_call": {"id": id, "name": name, "arguments": arguments}}]}


def bash(command, **extra):
    return call("bash", {"description": "test", "command": command, **extra})


def live(marker: str, prefix: str = "") -> list[int]:
    """Pids whose command line contains marker (and starts with prefix)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if marker in cmdline and cmdline.startswith(prefix) and state not in ("Z", "X") and entry.name != str(os.getpid()):
            pids.append(int(entry.name))
    return pids


def wait_sleeps(marker: str, count: int, timeout: float = 10.0) -> None:
    """Wait until `count` `sleep <marker>…` processes run."""
    deadline = time.monotonic() + timeout
    while len(live(marker, prefix="sleep ")) < count:
        assert time.monotonic() < deadline, f"only {live(marker, prefix='sleep ')} of {count} sleeps started"
        time.sleep(0.05)


def wait_gone(marker: str, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while live(marker):
        assert time.monotonic() < deadline, f"processes with {marker!r} survived: {live(marker)}"
        time.sleep(0.05)


def run_turn(make_raw, workspace, base_dir, replies, profile="sdk", env=None, session="s-tools"):
    raw = make_raw(profile=profile, **({"env": env} if env else {}))
    raw.initialize(workspace, model=write_scenario(base_dir, replies))
    start = len(raw.frames)
    raw.prompt(session, "go")
    raw.status(session, "idle", start=start)
    events = [f["params"]["event"] for f in raw.frames[start:] if f.get("method") == "session.event"]
    return raw, events


def results(events):
    return [e["data"] for e in events if e["type"] == "tool/result"]


def without_descriptions(schema):
    """A parameter schema with every `description` keyword removed (a
    property *named* description stays)."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "properties":
                out[key] = {name: without_descriptions(prop) for name, prop in value.items()}
            elif key == "description" and isinstance(value, str):
                continue
            else:
                out[key] = without_descriptions(value)
        return out
    if isinstance(schema, list):
        return [without_descriptions(v) for v in schema]
    return schema


def test_the_sdk_roster_matches_the_official_one_schema_for_schema(make_raw, workspace, base_dir, transcripts):
    official = json.loads((transcripts / "_extracted" / "request-tools.json").read_text())
    _, events = run_turn(make_raw, workspace, base_dir, [{"text": "hi"}])
    tools = first(events, "request/header")["data"]["header"]["tools"]
    assert [t["name"] for t in tools] == [t["name"] for t in official]
    assert len(tools) == 25
    by_name = {t["name"]: t for t in official}
    for tool in tools:
        assert json.dumps(without_descriptions(tool["parameters"])) == json.dumps(
            without_descriptions(by_name[tool["name"]]["input_schema"])
        ), tool["name"]
        assert tool["description"] and "official text omitted" not in tool["description"]


def test_the_sdk_roster_and_the_minimal_roster(make_raw, workspace, base_dir):
    _, events = run_turn(make_raw, workspace, base_dir, [{"text": "hi"}])
    tools = first(events, "request/header")["data"]["header"]["tools"]
    assert [t["name"] for t in tools] == [
        "bash", "create_goal", "edit", "exit_plan_mode", "get_goal", "glob", "grep", "interrupt_agent", "job_kill",
        "job_list", "job_output", "list_agents", "read", "read_image", "send_message", "skill", "subagent",
        "subagent_fork", "todo_write", "update_goal", "web_fetch", "web_search", "workflow", "working_directory",
        "write"]
    bash_spec = tools[0]["parameters"]
    assert list(bash_spec["properties"]) == ["description", "command", "timeoutMs", "workdir", "run_in_background",
                                             "sandbox_permissions", "justification"]
    assert bash_spec["required"] == ["description", "command"]
    assert all(t["description"] for t in tools)
    _, events = run_turn(make_raw, workspace, base_dir, [{"text": "hi"}], profile="sdk-minimal", session="s-min")
    tools = first(events, "request/header")["data"]["header"]["tools"]
    assert [t["name"] for t in tools] == ["bash", "read_image", "working_directory"]
    assert tools[0]["parameters"]["required"] == ["command"]


def test_a_multi_step_turn_with_bash_read_edit(make_raw, workspace, base_dir):
    (workspace / "notes.txt").write_text("line one\nline two\n")
    replies = [
        bash("echo hi"),
        call("read", {"file_path": "notes.txt"}, id="call_2"),
        call("edit", {"file_path": "notes.txt", "old_string": "two", "new_string": "2"}, id="call_3"),
        {"text": "edited"},
    ]
    _, events = run_turn(make_raw, workspace, base_dir, replies)
    texts = [r["message"]["content"][0]["text"] for r in results(events)]
    assert texts[0] == "hi\n"
    assert texts[1].startswith(f"<path>{workspace}/notes.txt</path>\n<type>file</type>\n<content>\n1: line one\n2: line two\n")
    assert not results(events)[2]["message"]["isError"], texts[2]
    assert (workspace / "notes.txt").read_text() == "line one\nline 2\n"
    assert [e["type"] for e in events].count("step/start") == 4
    assert first(events, "turn/end")["data"]["reason"] == {"kind": "completed"}


@pytest.mark.parametrize("mode, inside_ok, outside_ok", [
    ("read-only", False, False),
    ("workspace-write", True, False),
    ("danger-full-access", True, True),
])
def test_sandbox_modes_are_enforced(make_raw, workspace, base_dir, dsh_home, home, mode, inside_ok, outside_ok):
    from interop_support import clean_env

    # Outside the workspace and outside the temporary directories that
    # workspace-write leaves writable (/tmp, /var/tmp, /dev/shm).
    outside = Path("/var/cache") / f"dsh-sandbox-test-{os.getpid()}-{mode}"
    outside.mkdir(parents=True, exist_ok=True)
    request_cleanup = outside
    replies = [
        bash(f"echo x > inside.txt"),
        bash(f"echo x > {outside}/outside.txt"),
        call("write", {"file_path": "written.txt", "content": "x"}, id="call_3"),
        {"text": "done"},
    ]
    env = clean_env(dsh_home, home, DSH_PERMISSION_MODE=mode)
    _, events = run_turn(make_raw, workspace, base_dir, replies, env=env)
    texts = [r["message"]["content"][0]["text"] for r in results(events)]
    assert (workspace / "inside.txt").exists() == inside_ok, texts[0]
    assert (outside / "outside.txt").exists() == outside_ok, texts[1]
    assert (workspace / "written.txt").exists() == inside_ok, texts[2]
    if not outside_ok:
        assert f"[sandbox: file access denied under {mode} mode]" in texts[1]
    for path in request_cleanup.iterdir():
        path.unlink()
    request_cleanup.rmdir()


def test_no_tool_process_outlives_shutdown(make_raw, workspace, base_dir):
    replies = [
        bash("sleep 7801.1 & sleep 7801.2 & echo started"),
        bash("sleep 7801.3", run_in_background=True),
        {"text": "done"},
    ]
    raw, _ = run_turn(make_raw, workspace, base_dir, replies)
    wait_sleeps("7801.", 3)
    assert raw.shutdown() == 0
    wait_gone("7801.")


def test_no_tool_process_outlives_a_sigkilled_runtime(make_raw, workspace, base_dir):
    replies = [bash("sleep 7802.1 & sleep 7802.2 & wait", run_in_background=True), {"text": "done"}]
    raw, _ = run_turn(make_raw, workspace, base_dir, replies)
    wait_sleeps("7802.", 2)
    raw.proc.send_signal(signal.SIGKILL)
    raw.wait_exit()
    wait_gone("7802.")


def test_tool_output_cannot_corrupt_the_protocol_channel(make_raw, workspace, base_dir):
    noisy = ("echo JUNK-1; echo JUNK-2 >&2; echo JUNK-3 > /dev/stdout; echo JUNK-4 > /dev/stderr; "
             "for fd in /proc/$$/fd/*; do echo JUNK-5 > $fd 2>/dev/null; done; printf 'no newline JUNK-6'")
    raw, events = run_turn(make_raw, workspace, base_dir, [bash(noisy), {"text": "done"}])
    for line in raw.raw_lines:
        assert not line.startswith(b"JUNK") and not line.startswith(b"no newline"), line
    assert all("__unparsable__" not in f for f in raw.frames)
    text = results(events)[0]["message"]["content"][0]["text"]
    assert "JUNK-1" in text and "JUNK-2" in text
    assert first(events, "turn/end")["data"]["reason"]["kind"] == "completed"


def test_a_timeout_moves_the_command_to_a_background_job(make_raw, workspace, base_dir):
    replies = [
        bash("sleep 1; echo finished-late", timeoutMs=200),
        call("job_output", {"job_id": "PLACEHOLDER", "wait": True}, id="call_2"),
        {"text": "done"},
    ]
    raw, events = run_turn(make_raw, workspace, base_dir, replies[:1] + [{"text": "done"}])
    text = results(events)[0]["message"]["content"][0]["text"]
    assert "moved to background job bash-" in text, text
    raw.shutdown()
    wait_gone("finished-late")


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC"


def test_every_sdk_tool_through_the_binary(make_raw, workspace, base_dir):
    import base64
    import http.server
    import threading

    (workspace / "src").mkdir()
    (workspace / "src" / "a.rs").write_text("fn alpha() {}\nfn beta() {}\n")
    (workspace / "src" / "b.txt").write_text("beta here\n")
    (workspace / "dup.txt").write_text("x x\n")
    (workspace / "img.png").write_bytes(base64.b64decode(PNG))

    class Page(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = b"<html><body><h1>Fetched page</h1></body></html>"
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/page"
    replies = [
        call("glob", {"pattern": "**/*.rs"}, id="c_glob"),
        call("grep", {"pattern": "beta", "include": "*.rs"}, id="c_grep"),
        call("todo_write", {"todos": [{"content": "write tests", "status": "in_progress"}]}, id="c_todo"),
        bash("sleep 7810.1", run_in_background=True),
        call("job_list", {}, id="c_jobs"),
        call("read_image", {"file_path": "img.png"}, id="c_img"),
        call("web_fetch", {"url": url}, id="c_web"),
        call("web_fetch", {"url": "ftp://example.invalid/x"}, id="c_web_bad"),
        call("write", {"file_path": "dup.txt", "content": "y"}, id="c_write_unread"),
        call("read", {"file_path": "dup.txt"}, id="c_read"),
        call("edit", {"file_path": "dup.txt", "old_string": "x", "new_string": "z"}, id="c_edit_dup"),
        call("edit", {"file_path": "dup.txt", "old_string": "x", "new_string": "z", "replace_all": True}, id="c_edit_all"),
        call("read", {"file_path": 42}, id="c_bad_args"),
        call("grep", {"pattern": "("}, id="c_bad_regex"),
        {"text": "done"},
    ]
    raw, events = run_turn(make_raw, workspace, base_dir, replies)
    server.shutdown()
    by_id = {r["message"]["toolCallId"]: r for r in results(events)}

    def text(call_id):
        return "".join(b.get("text", "") for b in by_id[call_id]["message"]["content"])

    assert text("c_glob") == "src/a.rs", text("c_glob")  # relative to the cwd, as the official lists
    assert "a.rs" in text("c_grep") and "fn beta" in text("c_grep") and "b.txt" not in text("c_grep")
    assert first(events, "todo/write")["data"] == {"todos": [{"content": "write tests", "status": "in_progress"}]}
    assert "bash-" in text("c_jobs") and "sleep 7810.1" in text("c_jobs")
    image = by_id["c_img"]["message"]["content"]
    assert [b["type"] for b in image] == ["text", "image"]
    png = base64.b64decode(PNG)
    assert image[1]["attachment"] == {"attachmentId": "sha256:" + hashlib.sha256(png).hexdigest(), "mediaType": "image/png",
                                      "bytes": len(png), "width": 8, "height": 8, "name": "img.png"}
    assert "Fetched page" in text("c_web") and not by_id["c_web"]["message"]["isError"]
    assert by_id["c_web_bad"]["message"]["isError"]
    assert by_id["c_write_unread"]["message"]["isError"] and (workspace / "dup.txt").read_text() == "z z\n"
    assert by_id["c_edit_dup"]["message"]["isError"] and "2" in text("c_edit_dup")
    assert not by_id["c_edit_all"]["message"]["isError"]
    assert by_id["c_bad_args"]["message"]["isError"] and "file_path" in text("c_bad_args")
    assert by_id["c_bad_regex"]["message"]["isError"]
    assert first(events, "turn/end")["data"]["reason"] == {"kind": "completed"}
    # The background job outlives the turn; shutdown stops its whole group.
    wait_sleeps("7810.", 1)
    assert raw.shutdown() == 0
    wait_gone("7810.")


def test_the_persistent_shell_of_sdk_minimal_keeps_state(make_raw, workspace, base_dir):
    (workspace / "sub").mkdir()
    replies = [
        call("bash", {"command": "cd sub && export GREETING=hi"}),
        call("bash", {"command": "echo $GREETING from $(basename $PWD)"}, id="call_2"),
        {"text": "done"},
    ]
    _, events = run_turn(make_raw, workspace, base_dir, replies, profile="sdk-minimal", session="s-shell")
    texts = [r["message"]["content"][0]["text"] for r in results(events)]
    assert texts[1].startswith("hi from sub"), texts[1]
    assert "[Command finished with exit code 0]" in texts[1]
