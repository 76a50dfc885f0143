"""Differential check: the same scripted conversations through the official
runtime (deepseek-harness-runtime-bin 0.2.1rc2) and through dsh, both
against the fake model server, comparing the provider requests and the
normalised event streams.

Allowed differences (README, "Compatibility"): no `dsh_session_log` /
`dsh_plugin_packages` in requests and hence no
`session-log-deepseek/delivery-accepted` events; our own prose (system
prompt, runtime context, image handle text); `serverInfo.version`; the
user-agent and the anonymous user-id header. The tool roster is compared
only by name once dsh has tools (until then it is excluded).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT

KEY = "sk-differential-0000"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC"
REMOVED = {"session-log-deepseek/delivery-accepted"}
VOLATILE = {"id", "retryId", "time", "time0", "dt", "startedAt", "finishedAt", "createdAt", "delayMs", "jobId"}


@pytest.fixture(scope="session")
def official_bin() -> Path:
    env = os.environ.get("DSH_OFFICIAL_BIN", "").strip()
    if env:
        return Path(env)
    try:
        import deepseek_harness_runtime
    except ImportError:
        pytest.fail("deepseek-harness-runtime-bin==0.2.1rc2 is not installed in the test venv")
    path = Path(deepseek_harness_runtime.__file__).parent / "runtime" / "deepseek-harness-sdk-runtime-linux-x64"
    if not path.is_file():
        pytest.fail(f"official runtime executable not found at {path}")
    return path


def drive(binary, base_dir: Path, server, prompts, api_key=KEY, env=None, files=None, **options):
    """Run prompts on one session; returns the run results."""
    base_dir.mkdir(parents=True)
    (base_dir / "home").mkdir()
    (base_dir / "ws").mkdir()
    for name, text in (files or {}).items():
        (base_dir / "ws" / name).write_text(text)
    options.setdefault("model", "deepseek-v4-flash")
    harness = DeepSeekHarness(
        dsh_bin=str(binary),
        dsh_home=str(base_dir / "dsh_home"),
        cwd=str(base_dir / "ws"),
        provider="deepseek-official",
        base_url=server.base_url,
        api_key=api_key,
        request_timeout_seconds=FRAME_TIMEOUT,
        env={"HOME": str(base_dir / "home"), **(env or {})},
        **options,
    )
    try:
        session = harness.start_session("session-diff")
        return [session.run(prompt) for prompt in prompts]
    finally:
        harness.close()


def prompt_texts(prompts) -> set[str]:
    texts = set()
    for prompt in prompts:
        if isinstance(prompt, str):
            texts.add(prompt)
        else:
            texts.update(b["text"] for b in prompt if b.get("type") == "text")
    return texts


def normalise_request(request: dict, prompts) -> dict:
    body = copy.deepcopy(request["body"])
    for key in ("dsh_session_log", "dsh_plugin_packages", "tools"):
        body.pop(key, None)
    if "system" in body:
        body["system"] = "<system>"
    known = prompt_texts(prompts)
    for message in body.get("messages", []):
        for block in message["content"]:
            if message["role"] == "user" and block.get("type") == "text" and block["text"] not in known \
                    and not block["text"].startswith(("[image omitted", "Error: ")):
                block["text"] = "<prose>"
    headers = {k: request["headers"].get(k) for k in (
        "content-type", "accept", "x-api-key", "anthropic-version", "x-deepseek-harness-session-id")}
    return {"path": request["path"], "headers": headers, "body": body}


def scrub(value, key=None):
    if isinstance(value, dict):
        return {k: scrub(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, key) for v in value]
    if key in VOLATILE:
        return "<volatile>"
    return value


def normalise_events(results, prompts) -> list[dict]:
    events = [e for r in results for e in r.events]
    kept = [e for e in events if e["type"] not in REMOVED]
    renumber = {e["seq"]: i for i, e in enumerate(kept)}
    out = []
    for e in kept:
        e = copy.deepcopy(e)
        data = e["data"]
        if e["type"] == "system/message":
            data["message"]["content"] = "<system>"
        if e["type"] == "user/message" and data["source"]["kind"] != "user":
            data["content"] = "<prose>"
            for section in data["source"].get("sections", []):
                section["text"] = "<prose>"
        if e["type"] == "request/header":
            data["header"]["tools"] = "<tools>"
        if e["type"] == "session/title":
            data["messageSeqs"] = [renumber.get(s, s) for s in data["messageSeqs"]]
        if e["type"] in ("assistant/message", "assistant/attempt"):
            usage = data.get("usage")
            if usage:
                usage["inputTokens"] = usage["totalTokens"] = "<input-dependent>"
            for record in data["stream"]:
                chunk = record.get("chunk", {})
                if chunk.get("type") == "usage":
                    chunk["usage"]["inputTokens"] = chunk["usage"]["totalTokens"] = "<input-dependent>"
        e["seq"] = renumber[e["seq"]]
        if "sourceEventSeqs" in e:
            e["sourceEventSeqs"] = [renumber.get(s, s) for s in e["sourceEventSeqs"]]
        e.pop("time", None)
        out.append(scrub(e))
    return out


class Recorded:
    """Requests already taken from a fake server."""

    def __init__(self, requests):
        self._requests = requests

    def requests(self):
        return self._requests


def unbase_results(results, base: Path):
    for result in results:
        result.events = unbase(result.events, base)
        result.final_response = unbase(result.final_response, base)
    return results


SCENARIOS = {
    "plain_text": ([{"text": ["Hello from t", "he fake Deep", "Seek server."]}], ["Say hi"], {}),
    "reasoning_text": ([{"reasoning": ["The user wants", " a greeting."], "text": ["Hi ", "there!"]}], ["Greet me"], {}),
    "two_turns": ([{"text": "First answer."}, {"text": "Second answer."}], ["First question", "Second question"], {}),
    "unknown_tool_then_text": (
        [
            {"reasoning": "I need a tool", "blocks": [{"text": "Calling."}, {"tool_call": {"id": "toolu_diff_1", "name": "no_such_tool", "arguments": {"x": 1}}}]},
            {"text": "The tool is missing."},
        ],
        ["Use the tool"],
        {},
    ),
    "length_cutoff_with_tool": (
        [{"reasoning": "I should run a command", "blocks": [{"text": "Calling"}, {"tool_call": {"id": "toolu_cut_1", "name": "bash", "arguments": "{\"description\":\"Print hi\",\"comm"}}], "stop": "max_tokens"}],
        ["Run something"],
        {"max_tokens": 64},
    ),
    "error_500_then_ok": ([{"error": {"code": "X", "message": "fake internal error", "status": 500, "request_id": "fake-r1"}}, {"text": "Recovered."}], ["hi"], {}),
    "error_401_then_ok": ([{"error": {"code": "X", "message": "invalid api key", "status": 401, "request_id": "fake-r2"}}, {"text": "Works again."}], ["hi", "again"], {}),
    "error_stream_cut": ([{"text": ["partial", " more"], "cut": True}], ["hi"], {}),
    "error_stream_reset_then_ok": ([{"text": ["partial", " more"], "reset": True}, {"text": "Recovered."}], ["hi"], {}),
    "lone_surrogate_prompt": ([{"text": "ok"}], ["a\ud800b \udfff c \U0001F600"], {}),
    "init_options": ([{"text": "ok"}], ["hi"], {"model": "deepseek-flash", "reasoning_effort": "off", "max_tokens": 1000}),
    "image_prompt": (
        [{"text": "It is red."}],
        [[{"type": "text", "text": "What colour is this image?"}, {"type": "image", "data": PNG, "mimeType": "image/png"}]],
        {"model": "deepseek-flash"},
    ),
}


FULL_ACCESS = {"DSH_PERMISSION_MODE": "danger-full-access"}
NOTES = {"notes.txt": "line one\nline two\n", "a.txt": "alpha\n"}
SCENARIOS.update({
    "tool_bash": (
        [{"blocks": [{"text": "I will run a command."}, {"tool_call": {"id": "toolu_fake_bash_1", "name": "bash", "arguments": {"description": "Print hi", "command": "echo hi"}}}]},
         {"text": "The command printed hi."}],
        ["Run echo hi"],
        {"env": FULL_ACCESS},
    ),
    "tool_bash_full_access": (
        [{"blocks": [{"tool_call": {"id": "toolu_fake_bash_2", "name": "bash", "arguments": {"description": "Fail", "command": "echo hi; echo oops >&2; exit 3"}}}]},
         {"text": "It failed with 3."}],
        ["Run a failing command"],
        {"env": FULL_ACCESS},
    ),
    "tool_read": (
        [{"blocks": [{"tool_call": {"id": "toolu_fake_read_1", "name": "read", "arguments": {"file_path": "notes.txt"}}}]},
         {"text": "The file has two lines."}],
        ["Read notes.txt"],
        {"files": NOTES},
    ),
    # Issue 15: special files are refused with the official wording, and the
    # runtime's own stdin is not the protocol input in either runtime.
    "tool_special_files": (
        [{"blocks": [{"tool_call": {"id": "toolu_dev_1", "name": "read", "arguments": {"file_path": "/dev/zero"}}}]},
         {"blocks": [{"tool_call": {"id": "toolu_dev_2", "name": "read", "arguments": {"file_path": "/dev/stdin"}}}]},
         {"blocks": [{"tool_call": {"id": "toolu_dev_3", "name": "read", "arguments": {"file_path": "/proc/self/fd/0"}}}]},
         {"blocks": [{"tool_call": {"id": "toolu_dev_4", "name": "write", "arguments": {"file_path": "/dev/null", "content": "x"}}}]},
         {"text": "None of them is a regular file."}],
        ["Read the devices"],
        {"env": FULL_ACCESS},
    ),
    "tool_parallel": (
        [{"blocks": [
            {"tool_call": {"id": "toolu_par_1", "name": "bash", "arguments": {"description": "Print two", "command": "echo two"}}},
            {"tool_call": {"id": "toolu_par_2", "name": "read", "arguments": {"file_path": "a.txt"}}},
            {"tool_call": {"id": "toolu_par_3", "name": "no_such_tool", "arguments": {"x": 1}}},
        ]},
         {"text": "Done all three."}],
        ["Do three things"],
        {"env": FULL_ACCESS, "files": NOTES},
    ),
})


def unbase(value, *bases: Path):
    """Replace each run's own directory by <base> everywhere in value."""
    text = json.dumps(value)
    for base in bases:
        text = text.replace(str(base), "<base>")
    return json.loads(text)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_same_requests_and_events_as_the_official_runtime(name, official_bin, dsh_bin, fake_model, base_dir):
    replies, prompts, options = SCENARIOS[name]
    official_server = fake_model(replies)
    ours_server = fake_model(replies)
    official = drive(official_bin, base_dir / "official", official_server, prompts, **options)
    ours = drive(dsh_bin, base_dir / "ours", ours_server, prompts, **options)
    official = unbase_results(official, base_dir / "official")
    ours = unbase_results(ours, base_dir / "ours")
    official_server = Recorded(unbase(official_server.requests(), base_dir / "official"))
    ours_server = Recorded(unbase(ours_server.requests(), base_dir / "ours"))

    assert [r.final_response for r in ours] == [r.final_response for r in official]
    assert [r.finish_reason for r in ours] == [r.finish_reason for r in official]

    def messages_requests(server):
        return [normalise_request(r, prompts) for r in server.requests() if r["path"] == "/v1/messages"]

    assert messages_requests(ours_server) == messages_requests(official_server)
    ours_events = normalise_events(ours, prompts)
    official_events = normalise_events(official, prompts)
    assert [e["type"] for e in ours_events] == [e["type"] for e in official_events]
    for mine, theirs in zip(ours_events, official_events):
        assert mine == theirs, f"event {theirs['type']} (seq {theirs['seq']}) differs"


def test_missing_key_makes_no_request_in_either_runtime(official_bin, dsh_bin, fake_model, base_dir):
    official_server, ours_server = fake_model([{"text": "never"}]), fake_model([{"text": "never"}])
    official = drive(official_bin, base_dir / "official", official_server, ["hi"], api_key=None)
    ours = drive(dsh_bin, base_dir / "ours", ours_server, ["hi"], api_key=None)
    assert official_server.requests() == ours_server.requests() == []
    codes = [r.events[-1]["data"]["reason"]["error"]["code"] for r in (official[0], ours[0])]
    assert codes == ["MISSING_CREDENTIAL", "MISSING_CREDENTIAL"]
    assert [e["type"] for e in ours[0].events] == [e["type"] for e in official[0].events]
