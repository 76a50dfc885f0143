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
import re
from pathlib import Path

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import FRAME_TIMEOUT, RawClient, clean_env

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
        path = base_dir / "ws" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            path.write_bytes(text)
        elif isinstance(text, tuple):  # (text, mtime in seconds since the epoch)
            text, mtime = text
            path.write_text(text)
            os.utime(path, (mtime, mtime))
        else:
            path.write_text(text)
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
        for block in message["content"]:
            if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
                mask_image_handles(block["content"])
    headers = {k: request["headers"].get(k) for k in (
        "content-type", "accept", "x-api-key", "anthropic-version", "x-deepseek-harness-session-id")}
    return {"path": request["path"], "headers": headers, "body": mask_notes(body)}


# The note after a truncated glob listing is each runtime's own prose; the
# listing before it, the limit and the meta are compared.
GLOB_NOTE = re.compile(r"\n\n\((?:Showing \d+ of \d+ paths|\d+ more matching files not shown)[^\n]*\)$")
# So is the note after a truncated grep listing (where the whole listing
# was saved); the listing, its header and the meta are compared.
GREP_NOTE = re.compile(r"\n\n\((?:Full grep result stored at|All \d+ matching lines|\d+ more matching lines)[^\n]*\)$")
# The official grep runs ripgrep on several threads: the order of the files
# in a listing varies from run to run under load (dsh lists them in one
# fixed walk order). A listing is compared with its files sorted: the header,
# each file's block, the limit and the meta are compared, not the order.
GREP_LISTING = re.compile(r"^Found \d+ (?:of \d+ )?match(?:es)?\n\n")


def sorted_grep_listing(text: str) -> str:
    parts = text.split("\n\n")
    header, rest = parts[0], parts[1:]
    notes = [p for p in rest if p.startswith("(")]
    blocks = sorted(p for p in rest if not p.startswith("("))
    return "\n\n".join([header, *blocks, *notes])


# A re-encoded read_image copy: JPEG and WebP encoders differ byte-wise,
# so its size, hash and data are masked; the media type, the dimensions,
# the original dimensions and the text's structure are compared. The note
# after "px; " is each runtime's own prose.
REENCODED = ("image/jpeg", "image/webp")
IMAGE_BYTES = re.compile(r"(image/(?:jpeg|webp) image, \d+x\d+ px, )\d+( bytes)")
DOWNSCALE_NOTE = re.compile(r"(\(downscaled from \d+x\d+ px; )[^)\n]*\)")


def mask_image_handles(content):
    """The model-facing handle text after a tool result's first text block
    is each runtime's own prose, and so is the image sent (see below)."""
    for i, block in enumerate(content):
        if i > 0 and block.get("type") == "text" and block["text"].startswith("Image "):
            block["text"] = "<image handle>"
        # The official runtime sends the model its own preview of each
        # image (smaller, re-encoded); dsh sends the stored image.
        if block.get("type") == "image":
            block["source"] = "<request image>"


# A background job's id is random in both runtimes.
JOB_ID = re.compile(r"\bbash-[0-9a-f]{16}\b")


def mask_notes(value):
    if isinstance(value, dict):
        value = {k: mask_notes(v) for k, v in value.items()}
        if value.get("shape") == "matches" and isinstance(value.get("files"), list):
            value["files"] = sorted(value["files"], key=lambda f: f.get("path", ""))
        if value.get("mediaType") in REENCODED and "attachmentId" in value:
            value["attachmentId"] = value["bytes"] = "<encoder-dependent>"
        return value
    if isinstance(value, list):
        return [mask_notes(v) for v in value]
    if isinstance(value, str):
        value = JOB_ID.sub("bash-<job>", value)
        value = GLOB_NOTE.sub("\n\n(<glob truncation note>)", value)
        value = GREP_NOTE.sub("\n\n(<grep truncation note>)", value)
        if GREP_LISTING.match(value):
            value = sorted_grep_listing(value)
        value = IMAGE_BYTES.sub(r"\1<n>\2", value)
        return DOWNSCALE_NOTE.sub(r"\1<note>)", value)
    return value


def scrub(value, key=None):
    if isinstance(value, dict):
        return {k: scrub(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v, key) for v in value]
    if key in VOLATILE:
        return "<volatile>"
    return value


def mask_usage(data) -> None:
    """Masks the input-dependent token counts of a reply (or a failed
    attempt) and of its stream: each runtime's own prose and tools differ."""
    usage = data.get("usage")
    if usage:
        usage["inputTokens"] = usage["totalTokens"] = "<input-dependent>"
    for record in data["stream"]:
        chunk = record.get("chunk", {})
        if chunk.get("type") == "usage":
            chunk["usage"]["inputTokens"] = chunk["usage"]["totalTokens"] = "<input-dependent>"


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
            mask_usage(data)
        if e["type"] == "tool/result" and isinstance(data.get("meta"), dict):
            data["meta"].pop("jobId", None)  # ours: the official meta is {cwd}
        e["seq"] = renumber[e["seq"]]
        if "sourceEventSeqs" in e:
            e["sourceEventSeqs"] = [renumber.get(s, s) for s in e["sourceEventSeqs"]]
        e.pop("time", None)
        out.append(scrub(mask_notes(e)))
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
    # A missing file (and a missing directory on the way to it).
    "tool_read_missing": (
        [{"blocks": [{"tool_call": {"id": "toolu_miss_1", "name": "read", "arguments": {"file_path": "nope.txt"}}},
                     {"tool_call": {"id": "toolu_miss_2", "name": "read", "arguments": {"file_path": "no/such/dir.txt"}}}]},
         {"text": "Neither exists."}],
        ["Read the missing files"],
        {},
    ),
    # Consecutive calls of the reading tools with valid arguments form one
    # batch (every tool/call, then every tool/result); a call the schema
    # refuses, and any other tool, stands alone.
    "tool_batches": (
        [{"blocks": [{"tool_call": {"id": "toolu_bat_1", "name": "read", "arguments": {"file_path": "notes.txt"}}},
                     {"tool_call": {"id": "toolu_bat_2", "name": "read", "arguments": {"file_path": "nope.txt"}}},
                     {"tool_call": {"id": "toolu_bat_3", "name": "read", "arguments": {}}},
                     {"tool_call": {"id": "toolu_bat_4", "name": "read", "arguments": {"file_path": "a.txt"}}},
                     {"tool_call": {"id": "toolu_bat_5", "name": "glob", "arguments": {"pattern": "*.txt"}}},
                     {"tool_call": {"id": "toolu_bat_6", "name": "glob", "arguments": {"pattern": "*.md"}}},
                     {"tool_call": {"id": "toolu_bat_7", "name": "read", "arguments": {"file_path": "a.txt", "limit": 1}}},
                     {"tool_call": {"id": "toolu_bat_8", "name": "read", "arguments": {"file_path": "notes.txt", "offset": 2}}}]},
         {"text": "Read them."}],
        ["Read everything"],
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

# The fallback session title: five words, cut at 40 UTF-8 bytes on a
# character boundary, controls and invisible format characters dropped.
SCENARIOS.update({
    f"title_{name}": ([{"text": "ok"}], [prompt], {})
    for name, prompt in {
        "long_ascii": "abcdefghijklmnopqrstuvwxyz" * 2,
        "long_words": "Please summarise the following very long document about the history of computing",
        "emoji": "\U0001F600" * 13 + " hello",
        "cjk": "\u4e2d\u6587\u6807\u9898\u6d4b\u8bd5" * 4,
        "cut_before_space": "123456789012345678901234567890123456789 abc",
        "whitespace": "\n\n  hello\tworld  \r\n",
        "only_whitespace": "  \n\t ",
        "controls": "a\u000bb\u000cc\rd \u200b e\u202ef\u0001g \u200dh",
        "only_invisible": "\u200b\u0001",
    }.items()
})

# retry-after as the official runtime reads it: positive delay-seconds
# (digits, optional fraction) or a future HTTP date; anything else is left
# out of the failure and the normal back-off applies.
SCENARIOS.update({
    f"retry_after_{name}": (
        [{"error": {"code": "X", "message": "slow down", "status": 429, "retry_after": header}}, {"text": "After rate limit."}],
        ["hi"],
        {},
    )
    for name, header in {
        "zero": "0",
        "zero_fraction": "0.0",
        "negative": "-1",
        "garbage": "soon",
        "exponent": "1e0",
        "past_date": "Thu, 01 Jan 1970 00:00:01 GMT",
        "one_second": "1",
        "sub_millisecond": "0.0004",
    }.items()
})

# meta.cwd of bash is the workdir joined as written (not normalised); the
# persistent shell of sdk-minimal reports no meta.
SCENARIOS.update({
    "tool_bash_workdir_as_written": (
        [{"blocks": [
            {"tool_call": {"id": f"toolu_wd_{i}", "name": "bash", "arguments": {"description": "Where", "command": "pwd", "workdir": workdir}}}
            for i, workdir in enumerate(["sub/../sub", "./sub/", "", "."])
        ]},
         {"text": "Done."}],
        ["Where am I?"],
        {"env": FULL_ACCESS, "files": {"sub/x.txt": "x\n"}},
    ),
    "tool_shell_minimal_no_meta": (
        [{"blocks": [{"tool_call": {"id": "toolu_sh_1", "name": "bash", "arguments": {"command": "cd sub/.. && pwd"}}}]},
         {"blocks": [{"tool_call": {"id": "toolu_sh_2", "name": "bash", "arguments": {"command": "pwd"}}}]},
         {"text": "Done."}],
        ["Where am I?"],
        {"env": FULL_ACCESS, "files": {"sub/x.txt": "x\n"}, "profile": "sdk-minimal"},
    ),
})

# Issue 26, row 4: a command still running at its time limit moves to the
# background; the result is what it printed so far (nothing at all when it
# printed nothing), the marker, then the notice that the agent will be told
# when it ends. The commands outlive the turn; closing the session ends them.
SCENARIOS.update({
    "tool_bash_timeout_to_background": (
        [{"blocks": [{"tool_call": {"id": "toolu_bg_1", "name": "bash", "arguments": {"description": "Wait", "command": "sleep 30", "timeoutMs": 300}}}]},
         {"blocks": [{"tool_call": {"id": "toolu_bg_2", "name": "bash", "arguments": {"description": "Print, wait", "command": "echo early; echo err >&2; sleep 30", "timeoutMs": 400}}}]},
         {"text": "Both run on."}],
        ["Start the slow commands"],
        {"env": FULL_ACCESS},
    ),
})

# Issue 26, row 6: arguments that do not fit a tool's schema. Every problem
# is named (missing required properties first, then ill-typed ones in
# schema order), with error {ToolArgsError, INVALID_ARGS}; unknown
# properties are ignored; an empty argument string is {}.
BAD_ARGS = [
    ("read", {}),
    ("read", {"file_path": 5}),
    ("read", {"file_path": None}),
    ("read", {"file_path": "a.txt", "bogus": 1}),
    ("read", {"limit": "x", "offset": "y", "file_path": [1]}),
    ("read", {"file_path": "a.txt", "offset": 0}),
    ("read", {"file_path": "a.txt", "limit": 1.5}),
    ("read", ""),
    ("write", {"content": 5, "file_path": 5}),
    ("write", {"file_path": "b.txt"}),
    ("edit", {}),
    ("edit", {"new_string": 1, "file_path": "a.txt"}),
    ("edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta", "replace_all": "yes"}),
    ("bash", {"description": "d"}),
    ("bash", {"description": 1, "command": True}),
    ("bash", {"description": "d", "command": "true", "timeoutMs": None}),
    ("bash", {"description": "d", "command": "true", "timeoutMs": -5}),
    ("bash", {"description": "d", "command": "true", "sandbox_permissions": "root"}),
    ("bash", {"description": "d", "command": "true", "run_in_background": "yes"}),
    ("glob", {}),
    ("glob", {"pattern": "*.txt", "path": 1}),
    ("glob", {"pattern": "*.txt", "bogus": 1}),
    ("grep", {"pattern": ["a"]}),
    ("grep", {"pattern": "alpha", "include": None}),
    ("todo_write", {"todos": [{"content": 1, "status": "done"}, {"content": "a"}, {"content": "a", "status": "pending", "x": 1}, 5]}),
]
SCENARIOS.update({
    "tool_invalid_arguments": (
        [{"blocks": [{"tool_call": {"id": f"toolu_args_{i}", "name": name, "arguments": arguments}}]}
         for i, (name, arguments) in enumerate(BAD_ARGS)]
        + [{"text": "All refused."}],
        ["Call the tools badly"],
        {"env": FULL_ACCESS, "files": {"a.txt": "alpha\n"}},
    ),
    # Argument text that is not a JSON object never reaches a tool: the
    # reply is malformed and the turn ends with MALFORMED_RESPONSE.
    **{
        f"tool_arguments_{name}": (
            [{"blocks": [{"text": "Calling."}, {"tool_call": {"id": "toolu_raw_1", "name": "read", "arguments": raw}}]},
             {"text": "unused"}],
            ["Call read"],
            {"files": {"a.txt": "alpha\n"}},
        )
        for name, raw in {"not_json": "not json", "cut_json": "{\"file_path\": \"a.t", "blank": "  ",
                          "array": "[1,2]", "null": "null", "string": "\"a.txt\""}.items()
    },
})

# glob: oldest first, relative to the cwd, hidden and ignored files
# included, names matched at any depth; only .git is skipped.
GLOB_FILES = {name: ("x\n", 1_700_000_000 + age) for age, name in enumerate([
    "b.txt", ".hidden.txt", "ignored.txt", "d/z.txt", "a.txt", "node_modules/m.txt", ".git/c.txt"])}
GLOB_FILES[".gitignore"] = ("ignored.txt\nnode_modules/\n", 1_600_000_000)
SCENARIOS.update({
    "tool_glob_hidden_and_ignored": (
        [{"blocks": [
            {"tool_call": {"id": "toolu_glob_1", "name": "glob", "arguments": {"pattern": "*.txt"}}},
            {"tool_call": {"id": "toolu_glob_2", "name": "glob", "arguments": {"pattern": "**/*"}}},
            {"tool_call": {"id": "toolu_glob_3", "name": "glob", "arguments": {"pattern": "*.txt", "path": "d"}}},
        ]},
         {"text": "Found them."}],
        ["Find the text files"],
        {"files": GLOB_FILES},
    ),
    "tool_glob_truncated": (
        [{"blocks": [{"tool_call": {"id": "toolu_glob_4", "name": "glob", "arguments": {"pattern": "**/*.txt"}}}]},
         {"text": "Many."}],
        ["Find the text files"],
        {"files": {f"d/f{n:03}.txt": ("x\n", 1_700_000_000 + n) for n in range(130)}},
    ),
})


# Issue 26: a request for another sandbox (`sandbox_permissions` with its
# `justification`), checked as the official runtime checks it: the same
# approval/asked reason ("escalate sandbox to <mode>: <justification>"), the
# same approval/decided, the same result texts (no `error` object), the
# same refusals of a missing or blank justification, of a justification
# alone and of a narrower mode.
def escalation(call_id, tool, **arguments):
    base = {"bash": {"description": "Print hi", "command": "echo hi"},
            "write": {"file_path": "new.txt", "content": "x"},
            "edit": {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"}}[tool]
    return {"blocks": [{"tool_call": {"id": call_id, "name": tool, "arguments": {**base, **arguments}}}]}


WIDER = "danger-full-access"
SCENARIOS.update({
    "tool_sandbox_escalation": (
        [escalation("toolu_esc_1", "bash", sandbox_permissions=WIDER, justification="needs the network  "),
         escalation("toolu_esc_2", "bash", sandbox_permissions=WIDER),
         escalation("toolu_esc_3", "bash", sandbox_permissions=WIDER, justification=" "),
         escalation("toolu_esc_4", "bash", justification="no request"),
         escalation("toolu_esc_5", "bash", justification=""),
         escalation("toolu_esc_6", "bash", sandbox_permissions="workspace-write"),
         escalation("toolu_esc_7", "write", sandbox_permissions=WIDER, justification="write outside"),
         escalation("toolu_esc_8", "write", sandbox_permissions=WIDER),
         escalation("toolu_esc_9", "edit", sandbox_permissions=WIDER, justification="edit \"quoted\"\nline"),
         {"text": "All declined."}],
        ["Escalate"],
        {"files": NOTES},
    ),
    "tool_sandbox_escalation_read_only": (
        [escalation("toolu_ro_1", "bash", sandbox_permissions="workspace-write", justification="write here"),
         escalation("toolu_ro_2", "bash", sandbox_permissions=WIDER, justification="everything"),
         escalation("toolu_ro_3", "bash", sandbox_permissions="workspace-write"),
         {"text": "Declined."}],
        ["Escalate"],
        {"env": {"DSH_PERMISSION_MODE": "read-only"}},
    ),
    "tool_sandbox_narrowing": (
        [escalation("toolu_nar_1", "bash", sandbox_permissions="workspace-write", justification="narrower"),
         escalation("toolu_nar_2", "bash", sandbox_permissions="workspace-write"),
         escalation("toolu_nar_3", "bash", sandbox_permissions=WIDER),
         {"text": "Refused."}],
        ["Narrow"],
        {"env": FULL_ACCESS},
    ),
})


def png(width: int, height: int, rgba: bool = False) -> bytes:
    """A PNG of one colour (compresses to almost nothing)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    pixel = b"\xc8\x1e\x1e\x80" if rgba else b"\xc8\x1e\x1e"
    raw = (b"\0" + pixel * width) * height
    header = struct.pack(">IIBBBBB", width, height, 8, 6 if rgba else 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def padded_png(total: int) -> bytes:
    """A 16x16 PNG padded to `total` bytes with a private ancillary chunk."""
    import struct
    import zlib

    small = png(16, 16)
    kind = b"zzPd"
    data = b"\0" * (total - len(small) - 12)
    pad = struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    return small[:-12] + pad + small[-12:]


# read_image: attachments in the store, images above 2048x2048 px scaled
# down (JPEG, WebP with alpha), files above 4 MiB re-encoded at their size,
# the limits' errors.
IMAGES = {
    "small.png": __import__("base64").b64decode(PNG),
    "big.png": png(4000, 3000),
    "wide.png": png(8192, 600),
    "alpha.png": png(3000, 3000, rgba=True),
    "padded.png": padded_png(4 * 1024 * 1024 + 1),
    "limit.png": padded_png(4 * 1024 * 1024),
    "side.png": png(8193, 100),
    "text.png": b"not an image",
}
SCENARIOS.update({
    "tool_read_image": (
        # One call a step: the results' order is then fixed.
        [{"blocks": [{"tool_call": {"id": f"toolu_img_{i}", "name": "read_image", "arguments": {"file_path": name}}}]}
         for i, name in enumerate([*IMAGES, "missing.png", "."])]
        + [{"text": "Seen."}],
        ["Look at the images"],
        {"files": IMAGES, "model": "deepseek-flash"},  # a model with image input
    ),
})


# The file tools' failures, worded and classified (`tool/result.data.error`)
# as the official runtime does; one call a step, so the results' order is
# fixed. Paths resolve one segment at a time on the file system: a segment
# that is a file, or a `..` after a missing directory, cannot be resolved.
def calls(prefix, *steps):
    return [{"blocks": [{"tool_call": {"id": f"toolu_{prefix}_{i}", "name": name, "arguments": arguments}}]}
            for i, (name, arguments) in enumerate(steps)]


def bash(command):
    return ("bash", {"description": "Prepare", "command": command})


TWENTY = "".join(f"l{i}\n" for i in range(1, 21))
FS_FILES = {"notes.txt": "line one\nline two\n", "a.txt": "alpha\n", "dup.txt": "x\nx\n", "d/a.txt": "a\n",
            "empty.txt": "", "bom.txt": "\ufeffhi\n", "bin.dat": b"ab\0cd", "latin.txt": b"caf\xe9\n",
            "late_nul.txt": b"a" * 8192 + b"\0\n"}
SCENARIOS.update({
    "tool_read_failures": (
        calls("rf", *[("read", arguments) for arguments in [
            {"file_path": "nope.txt"},
            {"file_path": "no/such/dir.txt"},
            {"file_path": "d"},
            {"file_path": "d/"},
            {"file_path": "notes.txt", "offset": 3},
            {"file_path": "empty.txt", "offset": 2},
            {"file_path": "bin.dat"},
            {"file_path": "latin.txt"},
            {"file_path": "notes.txt/x"},
            {"file_path": "./notes.txt//x/"},
            {"file_path": "nope/../notes.txt"},
            {"file_path": "d/../notes.txt/x"},
            {"file_path": "~/notes.txt"},
            {"file_path": ""},
            {"file_path": "  ", "offset": 0},
            {"file_path": "empty.txt"},
            {"file_path": "bom.txt"},
            {"file_path": "late_nul.txt", "limit": 1},
        ]]) + [{"text": "Read what could be read."}],
        ["Read the files"],
        {"files": FS_FILES},
    ),
    # Lines over 2000 UTF-16 units are cut with the official note; a cut
    # through a surrogate pair keeps its first half as a lone surrogate.
    "tool_read_long_lines": (
        calls("ll", ("read", {"file_path": "long.txt"})) + [{"text": "Long lines."}],
        ["Read long lines"],
        {"files": {"long.txt": "x" * 2000 + "\n" + "x" * 2001 + "\n" + "\u00e9" * 2001 + "\n"
                   + "\U0001F600" * 1001 + "\n" + "a" + "\U0001F600" * 1000 + "\n"}},
    ),
    "tool_read_through_links": (
        calls("rl", bash("ln -s notes.txt ln_file; ln -s d ln_dir; ln -s nowhere dangling; ln -s loop loop"),
              *[("read", {"file_path": path}) for path in
                ["ln_file", "ln_dir/a.txt", "ln_dir/../notes.txt", "ln_dir", "dangling", "loop", "loop/x"]])
        + [{"text": "Read through the links."}],
        ["Read through links"],
        {"files": FS_FILES},
    ),
    "tool_edit_failures": (
        calls("ef",
              ("edit", {"file_path": "nope.txt", "old_string": "a", "new_string": "b"}),
              ("edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"}),
              ("edit", {"file_path": "d", "old_string": "a", "new_string": "b"}),
              ("edit", {"file_path": "notes.txt/x", "old_string": "a", "new_string": "b"}),
              ("edit", {"file_path": "", "old_string": "", "new_string": ""}),
              ("edit", {"file_path": "a.txt", "old_string": "", "new_string": "b"}),
              ("edit", {"file_path": "a.txt", "old_string": "same", "new_string": "same"}),
              ("read", {"file_path": "nope.txt"}),
              ("edit", {"file_path": "nope.txt", "old_string": "a", "new_string": "b"}),
              ("read", {"file_path": "dup.txt"}),
              ("edit", {"file_path": "dup.txt", "old_string": "zzz", "new_string": "b"}),
              ("edit", {"file_path": "dup.txt", "old_string": "x", "new_string": "y"}),
              ("read", {"file_path": "notes.txt", "offset": 2, "limit": 1}),
              ("read", {"file_path": "a.txt", "offset": 5}),
              ("edit", {"file_path": "a.txt", "old_string": "alpha", "new_string": "beta"}),
              bash("echo changed >> notes.txt"),
              ("edit", {"file_path": "notes.txt", "old_string": "line one", "new_string": "first"}),
              ("read", {"file_path": "notes.txt"}),
              bash("rm notes.txt"),
              ("edit", {"file_path": "notes.txt", "old_string": "line one", "new_string": "first"}),
              ("read", {"file_path": "empty.txt"}),
              bash("rm empty.txt && mkdir empty.txt"),
              ("edit", {"file_path": "empty.txt", "old_string": "a", "new_string": "b"}))
        + [{"text": "No edit went through."}],
        ["Edit the files"],
        {"files": FS_FILES},
    ),
    "tool_write_failures": (
        calls("wf",
              ("write", {"file_path": "notes.txt/x", "content": "x"}),
              ("write", {"file_path": "d", "content": "x"}),
              ("write", {"file_path": "d/", "content": "x"}),
              ("write", {"file_path": "a.txt", "content": "x"}),
              ("write", {"file_path": "", "content": "x"}),
              ("write", {"file_path": " ", "content": "x", "sandbox_permissions": "danger-full-access"}),
              ("write", {"file_path": "d/../nope/../new.txt", "content": "x"}),
              # Outside the workspace (the official file tools may write /tmp,
              # where the tests' workspaces are: a path outside both).
              ("write", {"file_path": "/proc/dsh-denied.txt", "content": "x"}),
              bash("ln -s nowhere dangling"),
              ("write", {"file_path": "dangling", "content": "x"}),
              ("read", {"file_path": "notes.txt"}),
              bash("echo changed >> notes.txt"),
              ("write", {"file_path": "notes.txt", "content": "x"}),
              ("read", {"file_path": "notes.txt"}),
              bash("rm notes.txt"),
              ("write", {"file_path": "notes.txt", "content": "x"}),
              ("read", {"file_path": "later.txt"}),
              bash("echo made > later.txt"),
              ("write", {"file_path": "later.txt", "content": "x"}))
        + [{"text": "No write went through."}],
        ["Write the files"],
        {"files": FS_FILES},
    ),
    "tool_write_edit_read_only": (
        calls("ro",
              ("write", {"file_path": "new.txt", "content": "x"}),
              ("write", {"file_path": "d", "content": "x"}),
              ("write", {"file_path": "notes.txt/x", "content": "x"}),
              ("edit", {"file_path": "notes.txt", "old_string": "line one", "new_string": "x"}),
              ("read", {"file_path": "notes.txt"}),
              ("edit", {"file_path": "notes.txt", "old_string": "zzz", "new_string": "x"}),
              ("read", {"file_path": "nope.txt"}),
              ("edit", {"file_path": "nope.txt", "old_string": "a", "new_string": "b"}))
        + [{"text": "Read-only."}],
        ["Change the files"],
        {"files": FS_FILES, "env": {"DSH_PERMISSION_MODE": "read-only"}},
    ),
    "tool_glob_grep_failures": (
        calls("gg",
              *[("glob", {"pattern": "*.txt", "path": path}) for path in ["nope", "./nope/", "notes.txt/x", "nope/../d", "  "]],
              ("glob", {"pattern": "*.zzz", "path": "notes.txt"}),
              ("glob", {"pattern": "*.zzz"}),
              ("glob", {"pattern": "nope/*.txt"}),
              ("glob", {"pattern": "  "}),
              ("glob", {"pattern": "[", "path": "nope"}),
              *[("grep", {"pattern": "line", "path": path}) for path in ["nope", "./nope/", "notes.txt/x", "nope/../d", "  "]],
              ("grep", {"pattern": ""}),
              ("grep", {"pattern": "(", "path": "nope"}),
              ("grep", {"pattern": "line", "include": "["}),
              ("grep", {"pattern": "line", "include": "  "}))
        + [{"text": "Searched."}],
        ["Search"],
        {"files": FS_FILES},
    ),
    # The file tools' successes: grep's match list (files in the order
    # the official runtime walks them: depth first, each directory's
    # entries in the reverse of the file system's order), its line cut and
    # its limit; edit's and write's confirmations and their diffs in
    # `tool/result.data.meta` (hunks with three lines of context).
    "tool_file_successes": (
        calls("fs",
              ("grep", {"pattern": "line"}),
              ("grep", {"pattern": "a", "path": "d"}),
              ("grep", {"pattern": "zzz"}),
              ("grep", {"pattern": "x", "include": "*.txt"}),
              ("grep", {"pattern": "w"}),
              ("grep", {"pattern": "k"}),
              ("grep", {"pattern": "long"}),
              ("grep", {"pattern": "w", "path": "c/a/e.txt"}),
              ("read", {"file_path": "notes.txt"}),
              ("edit", {"file_path": "notes.txt", "old_string": "line two", "new_string": "second\nthird"}),
              ("read", {"file_path": "dup.txt"}),
              ("edit", {"file_path": "dup.txt", "old_string": "x", "new_string": "y", "replace_all": True}),
              ("edit", {"file_path": "notes.txt", "old_string": "third", "new_string": "3", "replace_all": True}),
              ("read", {"file_path": "twenty.txt"}),
              ("edit", {"file_path": "twenty.txt", "old_string": "l10\n", "new_string": "TEN\n"}),
              ("edit", {"file_path": "twenty.txt", "old_string": "l2\n", "new_string": ""}),
              ("write", {"file_path": "twenty.txt", "content": TWENTY.replace("l3\n", "X\n").replace("l18\n", "Y\n")}),
              ("write", {"file_path": "twenty.txt", "content": "only\n"}),
              ("write", {"file_path": "twenty.txt", "content": "only"}),
              ("write", {"file_path": "twenty.txt", "content": "only"}),
              ("read", {"file_path": "crlf.txt"}),
              ("edit", {"file_path": "crlf.txt", "old_string": "b", "new_string": "B"}),
              ("write", {"file_path": "fresh.txt", "content": "one\ntwo\n"}),
              ("write", {"file_path": "d/deeper/new.txt", "content": ""}),
              ("read", {"file_path": "empty.txt"}),
              ("write", {"file_path": "empty.txt", "content": "now\n"}),
              ("read", {"file_path": "a.txt"}),
              ("write", {"file_path": "a.txt", "content": "alpha\nomega\n"}),
              ("write", {"file_path": "fresh.txt", "content": ""}),
              ("read", {"file_path": "notes.txt"}))
        + [{"text": "Changed."}],
        ["Change the files"],
        {"files": {**FS_FILES, "twenty.txt": TWENTY, "crlf.txt": "a\r\nb\r\nc\r\n", "kk.txt": "k\n" * 1200,
                   "long.txt": "long " + "y" * 2100 + "\n" + "long " + "\U0001F600" * 1200 + "\n",
                   **{name: "w\n" for name in ["y.txt", "bb.txt", "c/d.txt", "c/a/e.txt", "a/f.txt", "zz/g.txt",
                                               "A.txt", "_u.txt"]}}},
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


MISSING = object()
SESSION_ID_VALUES = [MISSING, None, 5, "", {"a": 1}, [1], True]
# session/prompt is left out: there the official runtime leaks internal
# messages and we answer a clear one (README, "Compatibility").
SESSION_ID_METHODS = {
    "session/wait": {},
    "session/resume": {},
    "session/working-directory/get": {},
    "session/working-directory/set": {"path": "."},
}


def session_id_errors(binary, base: Path) -> list:
    for name in ("dsh_home", "ws", "home"):
        (base / name).mkdir(parents=True)
    client = RawClient(binary, base / "dsh_home", base / "ws", base / "home")
    try:
        client.result("initialize", {"cwd": str(base / "ws"), "provider": "deepseek-official",
                                     "model": "deepseek-v4-flash", "baseUrl": "http://127.0.0.1:9"})
        answers = []
        for method, extra in SESSION_ID_METHODS.items():
            for value in SESSION_ID_VALUES:
                params = dict(extra) if value is MISSING else {"sessionId": value, **extra}
                response = client.request(method, params)
                answers.append((method, repr(value), response.get("error", response.get("result"))))
        return answers
    finally:
        client.kill()


def test_missing_or_non_string_session_ids_answer_like_the_official_runtime(official_bin, dsh_bin, base_dir):
    official = session_id_errors(official_bin, base_dir / "official")
    ours = session_id_errors(dsh_bin, base_dir / "ours")
    assert ours == official


PATCHES = {
    "empty_list": "[]\n",
    "commented_list": "# a patch layer\n[]\n",
    "entries": "- id: some-plugin\n  config:\n    a: !!js 1+1\n- {}\n",
    "empty_file": "",
    "comment_only": "# nothing\n",
    "scalar": "42\n",
    "entry_not_mapping": "- a\n- b\n",
    "second_entry_not_mapping": "- {}\n- [1]\n",
    "malformed": "[\n",
    "missing": None,
}


def launch_with_patch(binary, base: Path, patch: Path) -> tuple:
    """(exit code, first stderr line with the path replaced, initialize answered)."""
    for name in ("dsh_home", "ws", "home"):
        (base / name).mkdir(parents=True, exist_ok=True)
    client = RawClient(binary, base / "dsh_home", base / "ws", base / "home",
                       args=["--profile", "sdk", "--patch", str(patch)])
    try:
        client.send_request("initialize", {"cwd": str(base / "ws"), "provider": "deepseek-official",
                                           "model": "deepseek-v4-flash"}, id="init")
    except BrokenPipeError:
        pass  # the runtime refused the patch and exited before reading
    client.close_stdin()
    code = client.wait_exit(timeout=FRAME_TIMEOUT)
    frames = client.wait_eof()
    client._err_reader.join(FRAME_TIMEOUT)
    answered = any(f.get("id") == "init" and "result" in f for f in frames)
    errors = [line for line in client.stderr.decode().splitlines() if line.startswith("Error: ")]
    first = errors[0].replace(str(patch), "<patch>") if errors else None
    for library_text in ("Error: dsh: failed to parse overlay <patch>: ", "Error: dsh: failed to read overlay <patch>: "):
        if first and first.startswith(library_text):
            first = library_text + "<the YAML or I/O library's own text>"
    return code, first, answered


@pytest.mark.parametrize("name", sorted(PATCHES))
def test_patch_files_are_accepted_and_refused_like_the_official_runtime(name, official_bin, dsh_bin, base_dir):
    patch = base_dir / "patch.yml"
    if PATCHES[name] is not None:
        patch.write_text(PATCHES[name])
    official = launch_with_patch(official_bin, base_dir / "official", patch)
    ours = launch_with_patch(dsh_bin, base_dir / "ours", patch)
    assert ours == official


def test_the_official_profile_patch_layer_is_accepted(official_bin, dsh_bin, base_dir):
    """The patch layer the official runtime writes into DSH_HOME (a YAML list, `[]`)."""
    scratch = base_dir / "scratch.yml"
    scratch.write_text("[]\n")
    assert launch_with_patch(official_bin, base_dir / "official", scratch)[0] == 0
    layer = base_dir / "official" / "dsh_home" / "profiles" / "sdk" / "cordis.patch.yml"
    assert layer.is_file(), "the official runtime wrote no profile patch layer"
    assert launch_with_patch(dsh_bin, base_dir / "ours", layer) == (0, None, True)


# Issue 26: a fallback title ending on a lone surrogate. The official cut
# (40 UTF-8 bytes, never inside a character) counts a lone surrogate as 3
# bytes and keeps it whole, written back as its `\udXXX` escape in the
# `session/title` event; dsh carries it as a marker and must do the same.
TITLE_FIELD = re.compile(rb'"title":"(?:[^"\\]|\\.)*"')
LONE_TITLES = {
    "kept_at_the_cut": r"123456789012345678901234567890123456 \ud83dxyz more",
    "cut_before_it": r"1234567890123456789012345678901234567 \udc00x",
    "short": r"a\ud800b \udfff c",
    "pair_and_lone": r"\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00\ud83d\ude00a\udbff b",
}


def raw_title(binary, base: Path, server, prompt_json: str) -> tuple[bytes, list[bytes]]:
    """The `title` field of the session/title event as written on the wire
    (raw bytes), and the stored session log's lines that hold it."""
    for name in ("dsh_home", "ws", "home"):
        (base / name).mkdir(parents=True)
    env = clean_env(base / "dsh_home", base / "home", DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY=KEY)
    client = RawClient(binary, base / "dsh_home", base / "ws", base / "home", env=env)
    try:
        client.result("initialize", {"cwd": str(base / "ws"), "provider": "deepseek-official",
                                     "model": "deepseek-v4-flash"})
        client.send_raw('{"jsonrpc":"2.0","id":"p","method":"session/prompt","params":{"sessionId":"s-title",'
                        '"contentBlocks":[{"type":"text","text":"' + prompt_json + '"}]}}\n')
        client.response_to("p")
        client.status("s-title", "idle")
        lines = [line for line in client.raw_lines if b'"session/title"' in line]
        assert len(lines) == 1, client.summary()
    finally:
        assert client.shutdown() == 0
    import zstandard

    stored = []
    for log in (base / "dsh_home").rglob("*.jsonl.zstd"):
        data = zstandard.ZstdDecompressor().stream_reader(log.read_bytes(), read_across_frames=True).read()
        stored += [TITLE_FIELD.search(line).group(0) for line in data.splitlines()
                   if b'"session/title"' in line and TITLE_FIELD.search(line)]
    return TITLE_FIELD.search(lines[0]).group(0), stored


@pytest.mark.parametrize("name", sorted(LONE_TITLES))
def test_a_lone_surrogate_in_the_fallback_title_is_written_like_the_official_runtime(
        name, official_bin, dsh_bin, fake_model, base_dir):
    prompt = LONE_TITLES[name]
    official = raw_title(official_bin, base_dir / "official", fake_model([{"text": "ok"}]), prompt)
    ours = raw_title(dsh_bin, base_dir / "ours", fake_model([{"text": "ok"}]), prompt)
    assert ours[0] == official[0]
    if name == "kept_at_the_cut":
        assert ours[0] == rb'"title":"123456789012345678901234567890123456 \ud83d"'
    assert b"\\ufffd" not in ours[0] and "\ufffd".encode() not in ours[0]
    # The stored log holds the same title, escaped the same way.
    assert ours[1] == official[1] == [official[0]]


def test_the_readme_states_how_many_differential_tests_this_file_holds():
    """README's Status table names this file's test count; a stale number
    fails here (counted as `pytest --collect-only` counts it)."""
    import subprocess
    import sys

    here = Path(__file__)
    readme = (here.parents[2] / "README.md").read_text(encoding="utf-8")
    stated = re.search(r"`pytest --collect-only` counts them: (\d+) today", readme)
    assert stated, "README no longer states the count"
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", str(here), "--collect-only", "-q", "-p", "no:cacheprovider"],
        capture_output=True, text=True, cwd=here.parent, timeout=60,
    )
    count = re.search(r"(\d+) tests? collected", collected.stdout)
    assert count, collected.stdout + collected.stderr
    assert int(stated.group(1)) == int(count.group(1))
