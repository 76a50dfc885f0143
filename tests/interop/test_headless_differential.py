"""Issue 26, row 11: `dsh headless` against the official `--profile headless`.

Both runtimes run the same task against the fake model, in JSON and plain
mode, with `--session-id` (a known and an unknown one) and the task from
stdin. Compared: exit code, every stdout line (JSON records parsed), stderr,
and which provider requests were made (the official profile's model-made
session title aside: dsh titles every session as the sdk profile does). Masked: the session id (random in
both; its shape is checked), call ids (the fake model numbers them per
script), the working directory's base, and the input token counts of
`step_end.usage` (each runtime's own prose and tools are in the prompt).
Both call `dsh --profile headless`: the official spelling, which dsh takes
as `dsh headless`.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from interop_support import RUN_TIMEOUT, clean_env
from test_differential import KEY, official_bin  # noqa: F401 - fixture

SESSION_ID = re.compile(r"^session-[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
# The official headless profile asks the model for a session title first;
# the fake model answers it from this script, whatever the order.
TITLES = {"when": "Generate the session title", "replies": [{"text": "A title"}] * 4}


def headless(binary: Path, base: Path, server, args: list[str], stdin: str = "") -> dict:
    """Runs one `--profile headless` command in `base/ws`."""
    for sub in ("ws", "home"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    env = clean_env(base / "dsh_home", base / "home", DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY)
    done = subprocess.run([str(binary), "--profile", "headless", *args], cwd=base / "ws", env=env, input=stdin,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT)
    return {"code": done.returncode, "stdout": done.stdout, "stderr": done.stderr, "base": str(base)}


def normalise(run: dict) -> dict:
    """The run with its random and prose-dependent parts masked."""
    calls: dict[str, str] = {}
    stdout = run["stdout"].replace(run["base"], "<base>")
    lines = stdout.splitlines()
    records = []
    for line in lines if lines and lines[0].startswith("{") else []:
        record = json.loads(line)
        if "sessionId" in record:
            assert SESSION_ID.match(record["sessionId"]), record
            record["sessionId"] = "<session>"
        if "callId" in record:
            record["callId"] = calls.setdefault(record["callId"], f"call-{len(calls) + 1}")
        usage = record.get("usage")
        if usage:
            assert usage["totalTokens"] == usage["inputTokens"] + usage["outputTokens"], usage
            usage["inputTokens"] = usage["totalTokens"] = "<input-dependent>"
        records.append(record)
    return {
        "code": run["code"],
        "records": records if records else None,
        "stdout": None if records else stdout,
        "stderr": run["stderr"].replace(run["base"], "<base>"),
    }


def kinds(server) -> list[str]:
    """Which requests the fake model saw: title or turn step."""
    out = []
    for request in server.requests():
        texts = [b.get("text", "") for m in request["body"].get("messages", []) if m["role"] == "user"
                 for b in m["content"] if isinstance(m["content"], list)]
        out.append("title" if any(t.startswith("Generate the session title") for t in texts) else "step")
    return out


def without_title(kinds: list[str]) -> list[str]:
    """The official headless profile's requests less its one title request
    per new session (README, Compatibility: dsh keeps the fallback title)."""
    assert kinds.count("title") <= 1, kinds
    return [k for k in kinds if k != "title"]


TOOLS = [
    {"blocks": [
        {"reasoning": "I look first"},
        {"text": "Looking."},
        {"tool_call": {"name": "bash", "arguments": {"description": "Print hi", "command": "echo hi"}}},
        {"tool_call": {"name": "read", "arguments": {"file_path": "notes.txt"}}},
    ]},
    {"blocks": [{"tool_call": {"name": "read", "arguments": {}}},
                {"tool_call": {"name": "bash", "arguments": {"command": "echo no description"}}}]},
    {"blocks": [{"reasoning": "All seen"}, {"text": "Done: hi."}]},
]
ERROR = [{"error": {"code": "invalid_request_error", "message": "bad thing", "status": 400}}]
CASES = {
    "json_tools": (TOOLS, ["--json", "look around"], ""),
    "plain_tools": (TOOLS, ["look around"], ""),
    "json_error": (ERROR, ["--json", "fail"], ""),
    "plain_error": (ERROR, ["fail"], ""),
    "stdin_task": ([{"text": "From stdin."}], ["--json", "-"], "the task\nover two lines\n"),
    "unknown_session_json": ([{"text": "never"}], ["--json", "--session-id", "session-nope", "hi"], ""),
    "unknown_session_plain": ([{"text": "never"}], ["--session-id", "session-nope", "hi"], ""),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_headless_matches_the_official_profile(name, official_bin, dsh_bin, fake_model, base_dir):
    replies, args, stdin = CASES[name]
    runs, requests = {}, {}
    for who, binary in (("official", official_bin), ("dsh", dsh_bin)):
        server = fake_model(replies, agents=[TITLES])
        base = base_dir / who
        base.mkdir()
        (base / "ws").mkdir()
        (base / "ws" / "notes.txt").write_text("line one\nline two\n")
        runs[who] = normalise(headless(binary, base, server, args, stdin))
        requests[who] = kinds(server)
    assert runs["dsh"] == runs["official"]
    assert requests["dsh"] == without_title(requests["official"])
    if name.startswith("json_") or name == "stdin_task":
        assert runs["dsh"]["records"][0]["type"] == "session"


def test_a_session_continues_with_session_id_like_the_official_profile(official_bin, dsh_bin, fake_model, base_dir):
    """Two runs on one session, JSON then plain: the second continues the
    first's session (its turn is 2) in both runtimes."""
    runs = {}
    for who, binary in (("official", official_bin), ("dsh", dsh_bin)):
        server = fake_model([{"text": "First."}, {"text": "Second."}, {"text": "Third."}], agents=[TITLES])
        base = base_dir / who
        first = headless(binary, base, server, ["--json", "one"])
        session_id = json.loads(first["stdout"].splitlines()[0])["sessionId"]
        second = headless(binary, base, server, ["--json", "--session-id", session_id, "two"])
        third = headless(binary, base, server, ["--session-id", session_id, "three"])
        assert json.loads(second["stdout"].splitlines()[0])["sessionId"] == session_id
        runs[who] = [normalise(run) for run in (first, second, third)] + [kinds(server)]
    runs["official"][-1] = without_title(runs["official"][-1])
    assert runs["dsh"] == runs["official"]
    turns = [r["turn"] for r in runs["dsh"][1]["records"] if r.get("phase") == "turn_start"]
    assert turns == [2]
    assert runs["dsh"][2]["stdout"] == "Third.\n"
