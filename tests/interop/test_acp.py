"""`dsh acp` (issue 30) driven by a real ACP client: the protocol's own Python
SDK, `agent-client-protocol` (module `acp`), spawning `$DSH_BIN acp` and
talking to it through `ClientSideConnection` — the way an editor does. The
contract is docs/acp.md.

The model is either the offline `scripted` provider (`dsh acp --model
<scenario file>`, no network at all) or the fake DeepSeek server
(crates/dsh-fake-model: `DEEPSEEK_BASE_URL`), which records every provider
request so a test can see what reached the model.

How the tests read the agent:
- every JSON-RPC message the client receives is recorded in arrival order by
  a stream observer on the SDK's connection (`Agent.frames`), so a test can
  assert the order of updates relative to a response (`session/load` replays
  before it answers);
- each `session/update` is also validated against the SDK's schema
  (`SessionNotification`); a frame it refuses fails the test at the end;
- `session/request_permission` is answered by the test's `Client`
  (`Recorder.on_permission`), which records every request.

Every wait is bounded (a hang fails the test instead of stalling CI), and
nothing sleeps to make an assertion pass: tests wait for frames, files or
process exits, each with an upper bound. pytest has no asyncio plugin here:
each test body is one coroutine run by `asyncio.run` under an overall bound.

Run:  cd /work/main && DSH_BIN=$PWD/target/debug/dsh DSH_FAKE_MODEL=$PWD/target/debug/dsh-fake-model \\
        target/venv/bin/python -m pytest tests/interop/test_acp.py -q -p no:cacheprovider
Needs `agent-client-protocol==0.12.1` in the test venv (beside the packages of
tests/interop/requirements.txt)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import os
import signal
import sys
import time
import uuid
from datetime import datetime
from pathlib import Path
from typing import Any, Awaitable, Callable

import pytest
from acp import PROTOCOL_VERSION, RequestError, spawn_agent_process
from acp.helpers import (
    audio_block,
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    DeniedOutcome,
    EnvVariable,
    FileSystemCapabilities,
    HttpHeader,
    HttpMcpServer,
    Implementation,
    McpServerStdio,
    ReadTextFileResponse,
    RequestPermissionResponse,
    SessionNotification,
    SseMcpServer,
    WriteTextFileResponse,
)
from deepseek_harness import DeepSeekHarness
from pydantic import BaseModel

from interop_support import (
    EXIT_TIMEOUT,
    FRAME_TIMEOUT,
    REPO_ROOT,
    RUN_TIMEOUT,
    FakeModel,
    alive,
    clean_env,
    dsh_bin_path,
    run_bounded,
    http_mcp_server,
    wait_gone,
    with_marker,
    write_scenario,
)

KEY = "sk-acp-test-0000"
TEST_TIMEOUT = 150.0  # one whole test body
CANCEL_TIMEOUT = 5.0  # session/cancel -> the prompt answers
PYTHON = sys.executable  # the test venv's interpreter: it has the `mcp` package
MCP_DIR = REPO_ROOT / "tests" / "mcp"
STDIO_SERVER = MCP_DIR / "stdio_server.py"
# An 8x8 RGB PNG (the one tests/interop/test_providers.py uses).
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC"
PNG_SHA = "57cda64cead0869cd5f90dfebb024f4bd9a922aaea91d513de6fa3e949d88921"
MODES = ["read-only", "workspace-write", "danger-full-access"]
PERMISSION_KINDS = {"allow_once", "allow_always", "reject_once", "reject_always"}


def run(coro: Awaitable[Any]) -> Any:
    """Run one test body with an overall upper bound."""
    return asyncio.run(asyncio.wait_for(coro, TEST_TIMEOUT))


# ---------------------------------------------------------------------------
# Scripted replies
# ---------------------------------------------------------------------------


def call(name: str, arguments: dict, call_id: str = "toolu_1", **extra: Any) -> dict:
    """A model reply calling one tool."""
    return {"blocks": [{"tool_call": {"id": call_id, "name": name, "arguments": arguments}}], **extra}


def bash(command: str, call_id: str = "toolu_1", **extra: Any) -> dict:
    return call("bash", {"description": "Run a command", "command": command}, call_id, **extra)


def escalated_write(path: str, content: str, call_id: str) -> dict:
    """A `write` asking for the workspace-write sandbox (from read-only), with a justification."""
    return call("write", {"file_path": path, "content": content, "sandbox_permissions": "workspace-write",
                          "justification": "The task needs this file."}, call_id)


# ---------------------------------------------------------------------------
# The ACP client
# ---------------------------------------------------------------------------


PermissionHandler = Callable[[str, dict, list[dict]], Awaitable[RequestPermissionResponse]]


def choose(kind: str) -> PermissionHandler:
    """A permission handler selecting the option of `kind`."""

    async def handler(session_id: str, tool_call: dict, options: list[dict]) -> RequestPermissionResponse:
        [option] = [o for o in options if o["kind"] == kind]
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected", option_id=option["optionId"]))

    return handler


class Recorder:
    """The test's ACP `Client`: records updates and answers permission requests."""

    def __init__(self, buffers: dict[str, str] | None = None) -> None:
        self.conn = None
        self.typed_updates: list[tuple[str, Any]] = []
        self.on_permission: PermissionHandler | None = None
        # An editor: open buffers by absolute path (None: no `fs` offered).
        self.buffers = buffers
        self.reads: list[str] = []
        self.writes: list[tuple[str, str]] = []

    def on_connect(self, conn) -> None:
        self.conn = conn

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.typed_updates.append((session_id, update))

    async def request_permission(self, session_id: str, tool_call: Any, options: list, **kwargs: Any):
        if self.on_permission is None:
            raise RequestError.internal_error({"details": "this test expected no permission request"})
        return await self.on_permission(
            session_id,
            tool_call.model_dump(mode="json", by_alias=True, exclude_none=True),
            [o.model_dump(mode="json", by_alias=True, exclude_none=True) for o in options],
        )

    async def write_text_file(self, session_id: str, path: str, content: str, **kwargs: Any):
        if self.buffers is None:
            raise RequestError.method_not_found("fs/write_text_file")
        # The editor keeps the text in its buffer (this one never saves).
        self.writes.append((path, content))
        self.buffers[path] = content
        return WriteTextFileResponse()

    async def read_text_file(self, session_id: str, path: str, line: int | None = None, limit: int | None = None,
                             **kwargs: Any):
        if self.buffers is None:
            raise RequestError.method_not_found("fs/read_text_file")
        self.reads.append(path)
        if path not in self.buffers:
            raise RequestError.resource_not_found(path)
        return ReadTextFileResponse(content=self.buffers[path])


class Agent:
    """A running `dsh acp` and the client connected to it."""

    def __init__(self, conn, process, client: Recorder, stderr_path: Path, cwd: Path) -> None:
        self.conn = conn
        self.process = process
        self.client = client
        self.stderr_path = stderr_path
        self.cwd = cwd
        # (direction, message) in order; incoming are the agent's frames.
        self.log: list[tuple[str, dict]] = []
        self.schema_errors: list[str] = []
        self._changed = asyncio.Event()

    # -- recording ------------------------------------------------------------

    def observe(self, event) -> None:
        message = event.message
        self.log.append((event.direction.value, message))
        if event.direction.value == "incoming" and message.get("method") == "session/update":
            try:
                SessionNotification.model_validate(message.get("params"))
            except Exception as exc:  # noqa: BLE001 - reported at the end of the test
                self.schema_errors.append(f"{json.dumps(message)[:400]}: {exc}")
        self._changed.set()

    @property
    def frames(self) -> list[dict]:
        """The agent's frames (responses, requests, notifications) in arrival order."""
        return [m for d, m in self.log if d == "incoming"]

    def updates(self, session_id: str, start: int = 0) -> list[dict]:
        """The `update`s of one session's `session/update` notifications (frames from `start`)."""
        return [f["params"]["update"] for f in self.frames[start:]
                if f.get("method") == "session/update" and f["params"].get("sessionId") == session_id]

    def permission_requests(self, session_id: str | None = None) -> list[dict]:
        return [f["params"] for f in self.frames if f.get("method") == "session/request_permission"
                and (session_id is None or f["params"].get("sessionId") == session_id)]

    def stderr_tail(self, limit: int = 3000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-limit:]
        except OSError:
            return ""

    def summary(self, limit: int = 40) -> str:
        lines = [f"{d[:2]} {json.dumps(m)[:300]}" for d, m in self.log[-limit:]]
        return "\n  " + "\n  ".join(lines) + "\nstderr tail:\n" + self.stderr_tail()

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = FRAME_TIMEOUT, what: str = "a frame") -> Any:
        """Wait until predicate() is truthy (re-checked on every frame); returns its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"timed out after {timeout}s waiting for {what}; frames:{self.summary()}")
            self._changed.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._changed.wait(), min(remaining, 0.25))

    # -- requests ---------------------------------------------------------------

    async def request(self, coro: Awaitable[Any], timeout: float = FRAME_TIMEOUT) -> Any:
        """Await one request, bounded; a lost connection or a timeout fails with the frames and stderr."""
        try:
            return await asyncio.wait_for(coro, timeout)
        except ConnectionError:
            raise AssertionError(f"the agent closed the connection (exit status {self.process.returncode}); "
                                 f"frames:{self.summary()}") from None
        except asyncio.TimeoutError:
            raise AssertionError(f"no answer within {timeout}s; frames:{self.summary()}") from None

    async def initialize(self) -> Any:
        editor = self.client.buffers is not None
        fs = FileSystemCapabilities(read_text_file=editor, write_text_file=editor)
        return await self.request(self.conn.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(fs=fs),
            client_info=Implementation(name="dsh-acp-interop-tests", version="1.0.0"),
        ))

    async def new_session(self, cwd: Path | None = None, mcp_servers: list | None = None) -> str:
        response = await self.request(self.conn.new_session(cwd=str(cwd or self.cwd), mcp_servers=mcp_servers or []))
        return response.session_id

    async def prompt(self, session_id: str, *blocks: Any, timeout: float = RUN_TIMEOUT) -> str:
        """Send a prompt (strings become text blocks) and return its stopReason."""
        prompt = [text_block(b) if isinstance(b, str) else b for b in blocks]
        response = await self.request(self.conn.prompt(session_id=session_id, prompt=prompt), timeout)
        return response.stop_reason

    async def set_mode(self, session_id: str, mode: str) -> None:
        await self.request(self.conn.set_session_mode(session_id=session_id, mode_id=mode))


@pytest.fixture
def launch(dsh_home, workspace, home, base_dir):
    """launch(model=None, fake=None, args=(), env=None, cwd=workspace) -> async context manager
    yielding an initialized `Agent` (`dsh acp` spawned through the Python ACP SDK)."""
    dsh = dsh_bin_path()
    if not dsh.is_file():
        pytest.fail(f"dsh binary not found at {dsh} (build it, or set DSH_BIN)")
    counter = iter(range(1000))

    @contextlib.asynccontextmanager
    async def start(model: str | None = None, fake: FakeModel | None = None, args: tuple = (),
                    env: dict | None = None, cwd: Path | None = None, initialize: bool = True,
                    buffers: dict[str, str] | None = None):
        extra = {"DSH_RETRY_INITIAL_MS": "5", "DSH_RETRY_MAX_MS": "40", **(env or {})}
        if fake is not None:
            extra |= {"DEEPSEEK_BASE_URL": fake.base_url, "DEEPSEEK_API_KEY": KEY}
        argv = ["acp", *(["--model", model] if model else []), *args]
        stderr_path = base_dir / f"dsh-acp-{next(counter)}.stderr"
        client = Recorder(buffers)
        with open(stderr_path, "wb") as stderr:
            agent_box: list[Agent] = []

            def observe(event) -> None:
                if agent_box:
                    agent_box[0].observe(event)

            async with spawn_agent_process(
                client, str(dsh), *argv, env=clean_env(dsh_home, home, **extra), cwd=cwd or workspace,
                transport_kwargs={"stderr": stderr, "limit": 50 * 1024 * 1024, "shutdown_timeout": EXIT_TIMEOUT},
                observers=[observe],
            ) as (conn, process):
                agent = Agent(conn, process, client, stderr_path, cwd or workspace)
                agent_box.append(agent)
                try:
                    if initialize:
                        await agent.initialize()
                    yield agent
                finally:
                    # Every frame both ways, kept with the temp dir of a failed test.
                    with open(stderr_path.with_suffix(".frames.jsonl"), "w") as out:
                        for direction, message in agent.log:
                            out.write(json.dumps({"dir": direction, "msg": message}) + "\n")
                assert not agent.schema_errors, "session/update frames the ACP schema refuses:\n" + "\n".join(
                    agent.schema_errors)

    return start


@pytest.fixture
def fake(fake_model):
    """fake(replies) -> a running fake DeepSeek server (FakeModel)."""
    return fake_model


@pytest.fixture
def scripted(base_dir):
    """scripted(replies) -> absolute path of a scenario file for `dsh acp --model`."""
    directory = base_dir / "scenarios"
    directory.mkdir(exist_ok=True)
    return lambda replies: write_scenario(directory, replies)


# ---------------------------------------------------------------------------
# Reading updates
# ---------------------------------------------------------------------------


def chunk_texts(updates: list[dict], kind: str) -> list[str]:
    """The texts of the `kind` chunks (agent_message_chunk, agent_thought_chunk, user_message_chunk)."""
    return [u["content"]["text"] for u in updates
            if u.get("sessionUpdate") == kind and u.get("content", {}).get("type") == "text"]


def tool_calls(updates: list[dict]) -> dict[str, list[dict]]:
    """Each tool call's frames (its `tool_call`, then its `tool_call_update`s), by toolCallId, in order."""
    calls: dict[str, list[dict]] = {}
    for u in updates:
        if u.get("sessionUpdate") in ("tool_call", "tool_call_update"):
            calls.setdefault(u["toolCallId"], []).append(u)
    return calls


def started(frames: list[dict]) -> dict:
    starts = [f for f in frames if f["sessionUpdate"] == "tool_call"]
    assert starts, f"no tool_call frame announced this call: {frames}"
    return starts[0]


def status_of(frames: list[dict]) -> str | None:
    """The call's latest status."""
    statuses = [f["status"] for f in frames if f.get("status")]
    return statuses[-1] if statuses else None


def final_content(frames: list[dict]) -> list[dict]:
    """The call's content as the client shows it at the end (each `content` replaces the last)."""
    content: list[dict] = []
    for f in frames:
        if "content" in f and f["content"] is not None:
            content = f["content"]
    return content


def content_text(content: list[dict]) -> str:
    return "".join(c["content"].get("text", "") for c in content
                   if c.get("type") == "content" and c.get("content", {}).get("type") == "text")


def diffs(frames: list[dict]) -> list[dict]:
    """The distinct `diff` contents the call reported."""
    found: list[dict] = []
    for f in frames:
        for c in f.get("content") or []:
            if c.get("type") == "diff" and c not in found:
                found.append(c)
    return found


def one_call(updates: list[dict], kind: str | None = None) -> tuple[str, list[dict]]:
    calls = tool_calls(updates)
    if kind is not None:
        calls = {k: v for k, v in calls.items() if started(v).get("kind") == kind}
    assert len(calls) == 1, f"expected one tool call{f' of kind {kind}' if kind else ''}: {calls}"
    return next(iter(calls.items()))


def provider_requests(model: FakeModel) -> list[dict]:
    return [r for r in model.requests() if r["path"].endswith("/messages")]


def user_texts(request: dict) -> list[str]:
    """Every text of the `user` messages of a provider request (tool results excluded)."""
    texts = []
    for message in request["body"]["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        if isinstance(content, str):
            texts.append(content)
            continue
        texts += [b["text"] for b in content if b.get("type") == "text"]
    return texts


def assistant_texts(request: dict) -> list[str]:
    texts = []
    for message in request["body"]["messages"]:
        if message["role"] == "assistant" and isinstance(message["content"], list):
            texts += [b["text"] for b in message["content"] if b.get("type") == "text"]
    return texts


def model_options(config_options: list[dict], config_id: str) -> list[str]:
    """The values a select config option offers (grouped or flat)."""
    [option] = [o for o in config_options if o["id"] == config_id]
    values = []
    for entry in option["options"]:
        if "options" in entry:
            values += [o["value"] for o in entry["options"]]
        else:
            values.append(entry["value"])
    return values


def dump(model: BaseModel) -> dict:
    return model.model_dump(mode="json", by_alias=True, exclude_none=True)


async def wait_file(path: Path, timeout: float = FRAME_TIMEOUT) -> str:
    """Wait until `path` exists with a complete line; returns its text."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists():
            text = path.read_text()
            if text.endswith("\n"):
                return text
        await asyncio.sleep(0.02)  # polling interval only
    raise AssertionError(f"{path} was not written within {timeout}s")


def sleeper(marker: str, pid_file: Path) -> str:
    """A command that writes its PID to `pid_file`, then sleeps 30 s (its command line holds `marker`)."""
    return f"echo $$ > {pid_file}; exec sleep 30.{marker}"


# ---------------------------------------------------------------------------
# initialize, session/new
# ---------------------------------------------------------------------------


def test_initialize_and_new_session_advertise_the_contract(launch, scripted):
    """initialize: protocol 1, the official agent name, loadSession, image and embedded
    prompts (not audio), MCP over HTTP (not SSE), close/list/resume; session/new: the
    three permission modes (workspace-write current) and the `model` and
    `reasoning_effort` config options."""

    async def body():
        async with launch(model=scripted([{"text": "unused"}]), initialize=False) as agent:
            init = dump(await agent.initialize())
            assert init["protocolVersion"] == 1
            assert init["agentInfo"]["name"] == "deepseek-harness-acp"
            caps = init["agentCapabilities"]
            assert caps["loadSession"] is True
            assert caps["promptCapabilities"] == {"image": True, "audio": False, "embeddedContext": True}
            assert caps["mcpCapabilities"]["http"] is True and caps["mcpCapabilities"].get("sse", False) is False
            assert {"close", "list", "resume"} <= set(caps["sessionCapabilities"])
            assert init.get("authMethods", []) == []
            response = dump(await agent.request(agent.conn.new_session(cwd=str(agent.cwd), mcp_servers=[])))
            uuid.UUID(response["sessionId"])
            assert [m["id"] for m in response["modes"]["availableModes"]] == MODES
            assert response["modes"]["currentModeId"] == "workspace-write"
            ids = [o["id"] for o in response["configOptions"]]
            assert ids == ["model", "reasoning_effort"]
            effort = [o for o in response["configOptions"] if o["id"] == "reasoning_effort"][0]
            assert model_options(response["configOptions"], "reasoning_effort") == ["off", "low", "high", "max"]
            assert effort["currentValue"] == "high"

    run(body())


# ---------------------------------------------------------------------------
# 1. Streaming
# ---------------------------------------------------------------------------


def assert_streamed(agent: Agent, session_id: str, reasoning: str, text: str) -> None:
    updates = agent.updates(session_id)
    thoughts = chunk_texts(updates, "agent_thought_chunk")
    messages = chunk_texts(updates, "agent_message_chunk")
    assert "".join(thoughts) == reasoning, thoughts
    assert "".join(messages) == text, messages
    assert len(thoughts) > 1, f"the reasoning was not streamed: {thoughts}"
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk"), kinds


def test_streaming_with_the_scripted_model(launch, scripted):
    """Text and reasoning arrive as chunks while the model streams (the reasoning's first
    delta, then a stall, then the rest): joined they equal the reply; end_turn."""
    reasoning, text = ["Let me ", "think ", "about it."], ["Hel", "lo, ", "wor", "ld."]

    async def body():
        async with launch(model=scripted([{"reasoning": reasoning, "text": text, "stall_ms": 300}])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Say hello") == "end_turn"
            assert_streamed(agent, sid, "".join(reasoning), "".join(text))

    run(body())


def test_streaming_with_the_fake_deepseek_server(launch, fake):
    """The same through the DeepSeek provider: a slowly streamed reply arrives in several
    message chunks and thought chunks, joined equal to the reply; usage_update follows
    the step; end_turn."""
    reasoning, text = ["The user ", "wants ", "a greeting."], ["Hello ", "from the ", "fake ", "server."]

    async def body():
        server = fake([{"reasoning": reasoning, "text": text, "delta_gap_ms": 40}])
        async with launch(fake=server) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Greet me") == "end_turn"
            assert_streamed(agent, sid, "".join(reasoning), "".join(text))
            messages = chunk_texts(agent.updates(sid), "agent_message_chunk")
            assert len(messages) > 1, f"the text was not streamed: {messages}"
            usage = [u for u in agent.updates(sid) if u["sessionUpdate"] == "usage_update"]
            assert usage and all(isinstance(u["used"], int) and u["size"] > 0 for u in usage), usage
            [request] = provider_requests(server)
            assert request["body"]["model"] == "deepseek-v4-flash"
            assert user_texts(request)[0] == "Greet me"

    run(body())


# ---------------------------------------------------------------------------
# 2. Tool calls
# ---------------------------------------------------------------------------


def test_bash_is_an_execute_call_with_its_output(launch, scripted):
    """bash: a tool_call of kind execute with a readable title and rawInput, then a
    tool_call_update completed whose content holds the command's output."""
    marker = f"acp-{uuid.uuid4().hex[:8]}"

    async def body():
        async with launch(model=scripted([bash(f"echo {marker}"), {"text": "Ran it."}])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Run echo") == "end_turn"
            updates = agent.updates(sid)
            _, frames = one_call(updates)
            start = started(frames)
            assert start["kind"] == "execute"
            assert start["title"] and start["title"] != "bash", start
            assert start["rawInput"]["command"] == f"echo {marker}"
            assert status_of(frames) == "completed"
            assert f"{marker}\n" in content_text(final_content(frames))
            assert "".join(chunk_texts(updates, "agent_message_chunk")) == "Ran it."

    run(body())


def test_bash_output_is_reported_while_the_command_runs(launch, scripted):
    """`bash` output as it is written: an update carries the first line before the
    command prints the second (it waits on a file the test creates after seeing it)."""

    async def body():
        async with launch(model=scripted([
            bash("echo first-line; while [ ! -e go ]; do sleep 0.05; done; echo second-line"),
            {"text": "done"},
        ])) as agent:
            sid = await agent.new_session()
            task = asyncio.ensure_future(agent.prompt(sid, "Run it"))
            try:
                await agent.wait_for(lambda: any(
                    "first-line" in content_text(f.get("content") or [])
                    for f in agent.updates(sid) if f["sessionUpdate"] == "tool_call_update"),
                    what="an update with the first line")
            finally:
                (agent.cwd / "go").write_text("")
            assert await asyncio.wait_for(task, RUN_TIMEOUT) == "end_turn"
            _, frames = one_call(agent.updates(sid))
            assert status_of(frames) == "completed"
            assert "first-line\nsecond-line\n" in content_text(final_content(frames))

    run(body())


def assert_edit_call(frames: list[dict], path: Path) -> None:
    """A file tool's call: kind edit, the file's absolute path in locations, completed."""
    start = started(frames)
    assert start["kind"] == "edit", start
    locations = [loc["path"] for f in frames for loc in f.get("locations") or []]
    assert str(path) in locations, frames
    assert status_of(frames) == "completed", frames


def test_edit_reports_its_hunk_as_a_diff(launch, scripted, workspace):
    """edit (after a read): a call of kind edit on the file's absolute path whose `diff`
    (oldText -> newText), applied to the file before, gives the file on disk."""
    path = workspace / "notes.txt"
    before = "alpha\nbeta\ngamma\n"
    path.write_text(before)

    async def body():
        async with launch(model=scripted([
            call("read", {"file_path": "notes.txt"}, "r1"),
            call("edit", {"file_path": "notes.txt", "old_string": "beta", "new_string": "BETA"}, "e1"),
            {"text": "Edited."},
        ])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Edit it") == "end_turn"
            calls = tool_calls(agent.updates(sid))
            assert len(calls) == 2, calls
            (_, read), (_, edit) = calls.items()
            assert started(read)["kind"] == "read"
            assert_edit_call(edit, path)
            assert len(diffs(edit)) == 1, f"the one-hunk edit reported no single diff: {edit}"
            [hunk] = diffs(edit)
            assert hunk["path"] == str(path)
            assert "beta" in hunk["oldText"] and "BETA" in hunk["newText"], hunk
            assert before.count(hunk["oldText"]) == 1
            assert before.replace(hunk["oldText"], hunk["newText"]) == path.read_text() == "alpha\nBETA\ngamma\n"

    run(body())


def test_write_of_a_new_file_reports_a_diff(launch, scripted, workspace):
    """write of a new file: a call of kind edit on the file's absolute path, and a `diff`
    without oldText whose newText is the content written (docs/acp.md: `a diff per
    hunk for write/edit`); the file on disk holds it."""
    path = workspace / "new.txt"

    async def body():
        async with launch(model=scripted([
            call("write", {"file_path": "new.txt", "content": "alpha\nbeta\n"}, "w1"), {"text": "Written."},
        ])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Write it") == "end_turn"
            _, write = one_call(agent.updates(sid))
            assert_edit_call(write, path)
            assert path.read_text() == "alpha\nbeta\n"
            assert len(diffs(write)) == 1, f"the write of a new file reported no single diff: {write}"
            [created] = diffs(write)
            assert created["path"] == str(path)
            assert created.get("oldText") is None
            assert created["newText"] == "alpha\nbeta\n"

    run(body())


def test_write_over_a_file_reports_a_diff(launch, scripted, workspace):
    """write over a file read first: a `diff` whose oldText -> newText, applied to the
    file before, gives the file on disk."""
    path = workspace / "old.txt"
    before = "one\ntwo\nthree\n"
    path.write_text(before)

    async def body():
        async with launch(model=scripted([
            call("read", {"file_path": "old.txt"}, "r1"),
            call("write", {"file_path": "old.txt", "content": "one\n2\nthree\n"}, "w1"), {"text": "Rewritten."},
        ])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Rewrite it") == "end_turn"
            calls = tool_calls(agent.updates(sid))
            assert len(calls) == 2, calls
            (_, read), (_, write) = calls.items()
            assert started(read)["kind"] == "read"
            assert_edit_call(write, path)
            assert path.read_text() == "one\n2\nthree\n"
            found = diffs(write)
            assert found, f"the write over a file reported no diff: {write}"
            after = before
            for hunk in found:
                assert hunk["path"] == str(path)
                assert after.count(hunk.get("oldText") or "") == 1, hunk
                after = after.replace(hunk["oldText"], hunk["newText"])
            assert after == path.read_text()

    run(body())


def test_a_failing_command_completes_and_a_tool_error_fails(launch, scripted, workspace):
    """Status follows the tool result's error flag: a command that exits 3 ran (its
    result is not an error: `completed`, the output and the exit code in the
    content); editing a missing file is a tool error: `failed`, the error text in the
    content; the turn goes on to end_turn."""

    async def body():
        async with launch(model=scripted([
            bash("echo out-text; echo err-text >&2; exit 3", "b1"),
            call("edit", {"file_path": "missing.txt", "old_string": "a", "new_string": "b"}, "e1"),
            {"text": "Reported."},
        ])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Try things") == "end_turn"
            calls = tool_calls(agent.updates(sid))
            (_, command), (_, edit) = calls.items()
            assert status_of(command) == "completed", command
            output = content_text(final_content(command))
            assert "out-text" in output and "err-text" in output and "exit code: 3" in output, output
            assert status_of(edit) == "failed", edit
            assert "missing.txt" in content_text(final_content(edit)), edit
            assert not (workspace / "missing.txt").exists()

    run(body())


def test_todo_write_is_a_think_call_and_a_plan(launch, scripted):
    """todo_write: a tool call of kind think and a `plan` update listing the todos."""
    todos = [{"content": "write the tests", "status": "in_progress"}, {"content": "ship", "status": "pending"}]

    async def body():
        async with launch(model=scripted([call("todo_write", {"todos": todos}), {"text": "Planned."}])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Plan") == "end_turn"
            updates = agent.updates(sid)
            _, frames = one_call(updates)
            assert started(frames)["kind"] == "think"
            plans = [u for u in updates if u["sessionUpdate"] == "plan"]
            assert plans, [u["sessionUpdate"] for u in updates]
            assert [(e["content"], e["status"]) for e in plans[-1]["entries"]] == [
                (t["content"], t["status"]) for t in todos]

    run(body())


# ---------------------------------------------------------------------------
# 3. Permission requests
# ---------------------------------------------------------------------------


async def read_only_session(agent: Agent) -> str:
    sid = await agent.new_session()
    await agent.set_mode(sid, "read-only")
    await agent.wait_for(lambda: any(u["sessionUpdate"] == "current_mode_update" and u["currentModeId"] == "read-only"
                                     for u in agent.updates(sid)), what="current_mode_update read-only")
    return sid


def test_allow_once_runs_the_escalated_write(launch, scripted, workspace):
    """read-only session; the model asks `write` for workspace-write with a
    justification: request_permission names the call and offers the four option
    kinds; nothing is written before the answer; allow_once writes the file."""
    seen_before_answer: list[bool] = []

    async def body():
        async with launch(model=scripted([escalated_write("allowed.txt", "yes\n", "w1"), {"text": "Wrote it."}])) as agent:
            async def allow(session_id, tool_call, options):
                seen_before_answer.append((workspace / "allowed.txt").exists())
                return await choose("allow_once")(session_id, tool_call, options)

            agent.client.on_permission = allow
            sid = await read_only_session(agent)
            assert await agent.prompt(sid, "Write the file") == "end_turn"
            [request] = agent.permission_requests(sid)
            assert {o["kind"] for o in request["options"]} == PERMISSION_KINDS
            assert len({o["optionId"] for o in request["options"]}) == 4
            call_id = request["toolCall"]["toolCallId"]
            frames = tool_calls(agent.updates(sid))[call_id]
            assert started(frames)["kind"] == "edit"
            assert status_of(frames) == "completed"
            assert seen_before_answer == [False], "the write ran before the answer"
            assert (workspace / "allowed.txt").read_text() == "yes\n"

    run(body())


async def error_answer(session_id, tool_call, options):
    raise RequestError.internal_error({"details": "the editor failed"})


async def cancelled_answer(session_id, tool_call, options):
    return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))


@pytest.mark.parametrize("answer", ["reject_once", "cancelled", "error"])
def test_anything_but_an_allow_refuses_the_call(launch, scripted, workspace, answer):
    """reject_once, a `cancelled` outcome or an error answer: nothing is written, the
    call's tool_call_update is `failed`, and the turn goes on (the model is told)."""
    handler = {"reject_once": choose("reject_once"), "cancelled": cancelled_answer, "error": error_answer}[answer]

    async def body():
        async with launch(model=scripted([escalated_write("refused.txt", "no\n", "w1"), {"text": "Understood."}])) as agent:
            agent.client.on_permission = handler
            sid = await read_only_session(agent)
            assert await agent.prompt(sid, "Write the file") == "end_turn"
            [request] = agent.permission_requests(sid)
            frames = tool_calls(agent.updates(sid))[request["toolCall"]["toolCallId"]]
            assert status_of(frames) == "failed", frames
            assert not (workspace / "refused.txt").exists()
            assert "".join(chunk_texts(agent.updates(sid), "agent_message_chunk")) == "Understood."

    run(body())


def test_allow_always_covers_later_calls_in_the_session(launch, scripted, workspace):
    """allow_always on the first escalated write: a second one, in the next prompt of
    the same session, runs without asking (one request for two writes)."""

    async def body():
        async with launch(model=scripted([
            escalated_write("one.txt", "1\n", "w1"), {"text": "First."},
            escalated_write("two.txt", "2\n", "w2"), {"text": "Second."},
        ])) as agent:
            agent.client.on_permission = choose("allow_always")
            sid = await read_only_session(agent)
            assert await agent.prompt(sid, "Write one") == "end_turn"
            assert await agent.prompt(sid, "Write two") == "end_turn"
            assert len(agent.permission_requests(sid)) == 1
            assert (workspace / "one.txt").read_text() == "1\n" and (workspace / "two.txt").read_text() == "2\n"
            assert [status_of(f) for f in tool_calls(agent.updates(sid)).values()] == ["completed", "completed"]

    run(body())


def test_reject_always_refuses_later_calls_without_asking(launch, scripted, workspace):
    """reject_always on the first escalated write: a second one, in the next prompt,
    is refused without asking; neither file exists, both calls failed."""

    async def body():
        async with launch(model=scripted([
            escalated_write("one.txt", "1\n", "w1"), {"text": "First."},
            escalated_write("two.txt", "2\n", "w2"), {"text": "Second."},
        ])) as agent:
            agent.client.on_permission = choose("reject_always")
            sid = await read_only_session(agent)
            assert await agent.prompt(sid, "Write one") == "end_turn"
            assert await agent.prompt(sid, "Write two") == "end_turn"
            assert len(agent.permission_requests(sid)) == 1
            assert not (workspace / "one.txt").exists() and not (workspace / "two.txt").exists()
            assert [status_of(f) for f in tool_calls(agent.updates(sid)).values()] == ["failed", "failed"]

    run(body())


def test_cancel_while_a_permission_request_is_pending(launch, scripted, workspace):
    """The client sends session/cancel while asked, then answers the request
    `cancelled` (as ACP prescribes): stopReason cancelled, nothing written; the next
    prompt runs."""

    async def body():
        async with launch(model=scripted([escalated_write("never.txt", "x\n", "w1"), {"text": "Next turn."}])) as agent:
            async def cancel_then_answer(session_id, tool_call, options):
                await agent.conn.cancel(session_id=session_id)
                return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))

            agent.client.on_permission = cancel_then_answer
            sid = await read_only_session(agent)
            assert await agent.prompt(sid, "Write the file", timeout=FRAME_TIMEOUT) == "cancelled"
            assert len(agent.permission_requests(sid)) == 1
            assert not (workspace / "never.txt").exists()
            agent.client.on_permission = None
            start = len(agent.frames)
            assert await agent.prompt(sid, "Go on") == "end_turn"
            assert "".join(chunk_texts(agent.updates(sid, start), "agent_message_chunk")) == "Next turn."
            assert not (workspace / "never.txt").exists()

    run(body())


def test_session_cancel_alone_ends_a_pending_permission_request(launch, scripted, workspace):
    """The client sends session/cancel while asked and does not answer the request (yet):
    the turn ends `cancelled` without waiting for the answer; a late allow runs nothing."""

    async def body():
        async with launch(model=scripted([escalated_write("never.txt", "x\n", "w1"), {"text": "Next turn."}])) as agent:
            prompt_done = asyncio.Event()

            async def cancel_and_hold(session_id, tool_call, options):
                await agent.conn.cancel(session_id=session_id)
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(prompt_done.wait(), FRAME_TIMEOUT)
                return await choose("allow_once")(session_id, tool_call, options)

            agent.client.on_permission = cancel_and_hold
            sid = await read_only_session(agent)
            try:
                assert await agent.prompt(sid, "Write the file", timeout=CANCEL_TIMEOUT) == "cancelled"
            finally:
                prompt_done.set()
            assert len(agent.permission_requests(sid)) == 1
            # The late allow has been sent; the next prompt is answered after it.
            agent.client.on_permission = None
            assert await agent.prompt(sid, "Go on") == "end_turn"
            assert not (workspace / "never.txt").exists(), "a late allow after the cancel ran the write"

    run(body())


# ---------------------------------------------------------------------------
# 4. session/cancel
# ---------------------------------------------------------------------------


def test_cancel_mid_stream(launch, scripted):
    """session/cancel after the first chunk of a reply that stalls: stopReason cancelled
    within seconds, the rest of the reply never arrives; the next prompt works."""

    async def body():
        async with launch(model=scripted([
            {"text": ["Partial answer ", "that never ends."], "stall_ms": 30000},
            {"text": "Second answer."},
        ])) as agent:
            sid = await agent.new_session()
            task = asyncio.ensure_future(agent.prompt(sid, "first"))
            await agent.wait_for(lambda: chunk_texts(agent.updates(sid), "agent_message_chunk"),
                                 what="the first agent_message_chunk")
            begun = time.monotonic()
            await agent.conn.cancel(session_id=sid)
            assert await asyncio.wait_for(task, CANCEL_TIMEOUT) == "cancelled"
            assert time.monotonic() - begun < CANCEL_TIMEOUT
            assert "that never ends." not in "".join(chunk_texts(agent.updates(sid), "agent_message_chunk"))
            start = len(agent.frames)
            assert await agent.prompt(sid, "second") == "end_turn"
            assert "".join(chunk_texts(agent.updates(sid, start), "agent_message_chunk")) == "Second answer."

    run(body())


def test_cancel_before_the_first_chunk(launch, scripted):
    """session/cancel while the model has not answered yet (delay_ms): cancelled at once."""

    async def body():
        async with launch(model=scripted([{"text": "too late", "delay_ms": 30000}, {"text": "On time."}])) as agent:
            sid = await agent.new_session()
            task = asyncio.ensure_future(agent.prompt(sid, "first"))
            # The prompt is in flight once the agent has it; give it a frame to show that.
            await agent.wait_for(lambda: any(d == "outgoing" and m.get("method") == "session/prompt"
                                             for d, m in agent.log), what="the prompt sent")
            await agent.conn.cancel(session_id=sid)
            assert await asyncio.wait_for(task, CANCEL_TIMEOUT) == "cancelled"
            assert "too late" not in "".join(chunk_texts(agent.updates(sid), "agent_message_chunk"))
            start = len(agent.frames)
            assert await agent.prompt(sid, "second") == "end_turn"
            assert "".join(chunk_texts(agent.updates(sid, start), "agent_message_chunk")) == "On time."

    run(body())


def test_cancel_mid_tool_kills_the_command(launch, scripted, workspace):
    """session/cancel while `bash` runs `sleep 30`: stopReason cancelled within seconds,
    the sleep process (its PID written first) is gone; the next prompt works."""
    marker = f"{uuid.uuid4().int % 10**6:06d}"
    pid_file = workspace / "pid.txt"

    async def body():
        async with launch(model=scripted([bash(sleeper(marker, pid_file)), {"text": "After the cancel."}])) as agent:
            sid = await agent.new_session()
            task = asyncio.ensure_future(agent.prompt(sid, "Sleep"))
            pid = int((await wait_file(pid_file)).strip())
            assert alive(pid)
            begun = time.monotonic()
            await agent.conn.cancel(session_id=sid)
            assert await asyncio.wait_for(task, CANCEL_TIMEOUT) == "cancelled"
            assert time.monotonic() - begun < CANCEL_TIMEOUT
            assert wait_gone([pid]) == [], f"the command {pid} outlived the cancel"
            assert with_marker(f"30.{marker}") == []
            start = len(agent.frames)
            assert await agent.prompt(sid, "Again") == "end_turn"
            assert "".join(chunk_texts(agent.updates(sid, start), "agent_message_chunk")) == "After the cancel."

    try:
        run(body())
    finally:
        for pid in with_marker(f"30.{marker}"):
            os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------
# 5. Sessions: list, close, load, resume
# ---------------------------------------------------------------------------


def test_list_is_newest_first_filtered_by_cwd_with_title_and_time(launch, scripted, workspace, base_dir):
    """session/list: the sessions of DSH_HOME, the most recently active first (a
    session prompted again moves to the top), `cwd` keeps that directory's only;
    each has its cwd, a title and an ISO 8601 updatedAt."""
    other = base_dir / "other-workspace"
    other.mkdir()

    async def body():
        async with launch(model=scripted([{"text": "one"}, {"text": "two"}, {"text": "three"}, {"text": "four"}])) as agent:
            first = await agent.new_session()
            assert await agent.prompt(first, "First session question") == "end_turn"
            second = await agent.new_session()
            assert await agent.prompt(second, "Second session question") == "end_turn"
            elsewhere = await agent.new_session(cwd=other)
            assert await agent.prompt(elsewhere, "Elsewhere question") == "end_turn"

            here = dump(await agent.request(agent.conn.list_sessions(cwd=str(workspace))))["sessions"]
            assert [s["sessionId"] for s in here] == [second, first]
            for s in here:
                assert s["cwd"] == str(workspace)
                assert isinstance(s.get("title"), str) and s["title"].strip(), s
                datetime.fromisoformat(s["updatedAt"].replace("Z", "+00:00"))
            everything = dump(await agent.request(agent.conn.list_sessions()))["sessions"]
            assert [s["sessionId"] for s in everything][:3] == [elsewhere, second, first]
            assert [s["cwd"] for s in everything if s["sessionId"] == elsewhere] == [str(other)]
            stamps = [datetime.fromisoformat(s["updatedAt"].replace("Z", "+00:00")) for s in everything]
            assert stamps == sorted(stamps, reverse=True)

            assert await agent.prompt(first, "First session again") == "end_turn"
            here = dump(await agent.request(agent.conn.list_sessions(cwd=str(workspace))))["sessions"]
            assert [s["sessionId"] for s in here] == [first, second]
            # A title the agent announced is the title listed.
            for s in here:
                titles = [u["title"] for u in agent.updates(s["sessionId"])
                          if u["sessionUpdate"] == "session_info_update" and u.get("title")]
                if titles:
                    assert s["title"] == titles[-1]

    run(body())


def test_close_then_load_replays_the_stored_turn_before_answering(launch, scripted):
    """session/load of a closed session replays its turn as updates, in order, before
    the load response: the prompt (user_message_chunk), the text before the tool call,
    the tool call (same id), the final text; the session then continues."""

    async def body():
        async with launch(model=scripted([
            {"blocks": [{"text": "I will run it."},
                        {"tool_call": {"id": "toolu_r", "name": "bash",
                                       "arguments": {"description": "Echo", "command": "echo replayed"}}}]},
            {"text": "All done."},
            {"text": "After the load."},
        ])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Run the check") == "end_turn"
            live_call_id, _ = one_call(agent.updates(sid))
            await agent.request(agent.conn.close_session(session_id=sid))

            before = len(agent.log)
            loaded = dump(await agent.request(agent.conn.load_session(cwd=str(agent.cwd), session_id=sid, mcp_servers=[])))
            assert [m["id"] for m in loaded["modes"]["availableModes"]] == MODES
            # The messages of the load, in order; the response is the last one.
            incoming = [m for d, m in agent.log[before:] if d == "incoming"]
            answer = [i for i, m in enumerate(incoming) if "id" in m and "method" not in m and "result" in m]
            assert answer, incoming
            replay = [m["params"]["update"] for m in incoming[:answer[-1]]
                      if m.get("method") == "session/update" and m["params"]["sessionId"] == sid]
            kinds = [u["sessionUpdate"] for u in replay]
            assert "".join(chunk_texts(replay, "user_message_chunk")) == "Run the check", kinds
            order = []
            for u in replay:
                if u["sessionUpdate"] == "user_message_chunk":
                    order.append("user")
                elif u["sessionUpdate"] == "agent_message_chunk":
                    order.append(u["content"].get("text"))
                elif u["sessionUpdate"] == "tool_call":
                    order.append(("tool_call", u["toolCallId"]))
            order = [o for i, o in enumerate(order) if i == 0 or o != order[i - 1]]
            assert order == ["user", "I will run it.", ("tool_call", live_call_id), "All done."], order
            replayed_call = tool_calls(replay)[live_call_id]
            assert started(replayed_call)["kind"] == "execute"
            assert "replayed" in content_text(final_content(replayed_call))

            start = len(agent.frames)
            assert await agent.prompt(sid, "And now?") == "end_turn"
            assert "".join(chunk_texts(agent.updates(sid, start), "agent_message_chunk")) == "After the load."

    run(body())


def test_close_then_resume_does_not_replay(launch, scripted):
    """session/resume of a closed session answers without replaying anything; the
    session continues with its history."""

    async def body():
        async with launch(model=scripted([{"text": "Before."}, {"text": "After the resume."}])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Hello") == "end_turn"
            await agent.request(agent.conn.close_session(session_id=sid))
            start = len(agent.frames)
            resumed = dump(await agent.request(agent.conn.resume_session(cwd=str(agent.cwd), session_id=sid)))
            replayed = [u for u in agent.updates(sid, start)
                        if u["sessionUpdate"] in ("user_message_chunk", "agent_message_chunk", "tool_call")]
            assert replayed == [], f"session/resume replayed the session: {replayed}"
            assert [m["id"] for m in resumed["modes"]["availableModes"]] == MODES
            assert await agent.prompt(sid, "Again") == "end_turn"
            after = agent.updates(sid, start)
            assert chunk_texts(after, "user_message_chunk") == []
            assert "".join(chunk_texts(after, "agent_message_chunk")) == "After the resume."

    run(body())


def test_session_errors(launch, scripted, base_dir):
    """Errors, each a JSON-RPC error (the connection keeps working): load and resume of
    an unknown id, load and resume with a cwd the session does not belong to, a
    prompt to a closed session."""
    other = base_dir / "not-the-sessions-cwd"
    other.mkdir()

    async def body():
        async with launch(model=scripted([{"text": "stored"}])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Store me") == "end_turn"
            await agent.request(agent.conn.close_session(session_id=sid))
            unknown = str(uuid.uuid4())
            for what, request in [
                ("load unknown", agent.conn.load_session(cwd=str(agent.cwd), session_id=unknown, mcp_servers=[])),
                ("resume unknown", agent.conn.resume_session(cwd=str(agent.cwd), session_id=unknown)),
                ("load wrong cwd", agent.conn.load_session(cwd=str(other), session_id=sid, mcp_servers=[])),
                ("resume wrong cwd", agent.conn.resume_session(cwd=str(other), session_id=sid)),
                ("prompt closed", agent.conn.prompt(session_id=sid, prompt=[text_block("hello?")])),
            ]:
                with pytest.raises(RequestError) as caught:
                    await agent.request(request)
                assert caught.value.code in (-32602, -32002, -32603, -32600), (what, caught.value.code)
                assert str(caught.value), what
            # Still serving, and the session itself is intact.
            await agent.request(agent.conn.resume_session(cwd=str(agent.cwd), session_id=sid))

    run(body())


# ---------------------------------------------------------------------------
# 6. Prompt content
# ---------------------------------------------------------------------------


def test_an_image_reaches_an_image_model_inline(launch, fake):
    """An image block reaches deepseek-flash (a model with image input) as a base64
    image in the provider request; deepseek-v4-flash gets the text-only placeholder
    naming the attachment (docs/providers.md)."""

    async def body():
        server = fake([{"text": "It is red."}, {"text": "Cannot see it."}])
        async with launch(fake=server, args=("--model", "deepseek-flash")) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "What colour is this?", image_block(PNG, "image/png")) == "end_turn"
        async with launch(fake=server) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "What colour is this?", image_block(PNG, "image/png")) == "end_turn"
        inline, text_only = provider_requests(server)
        assert inline["body"]["model"] == "deepseek-flash"
        content = inline["body"]["messages"][0]["content"]
        assert content[0] == {"type": "text", "text": "What colour is this?"}
        assert {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}} in content
        assert text_only["body"]["model"] == "deepseek-v4-flash"
        content = text_only["body"]["messages"][0]["content"]
        assert not [b for b in content if b.get("type") == "image"]
        assert any(b.get("type") == "text" and "image omitted" in b["text"] and PNG_SHA[:8] in b["text"]
                   for b in content), content

    run(body())


def test_embedded_resources_and_links_reach_the_model_as_text(launch, fake):
    """Text, an embedded text resource and a resource_link become one user
    text, joined as the official profile joins text and links: the prompt,
    the resource between `[resource uri=…]` and `[/resource]` lines, then
    the `[resource_link name=… uri=…]` line."""
    uri = "file:///project/src/notes.md"
    body_text = f"RESOURCE-BODY-{uuid.uuid4().hex[:8]}"
    link = "file:///project/README.md"

    async def body():
        server = fake([{"text": "Read it."}])
        async with launch(fake=server) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Summarise these",
                                      resource_block(embedded_text_resource(uri, body_text, mime_type="text/markdown")),
                                      resource_link_block("README.md", link)) == "end_turn"
        [request] = provider_requests(server)
        texts = user_texts(request)
        assert texts[0] == (f'Summarise these\n[resource uri="{uri}"]\n{body_text}\n[/resource]\n'
                            f'\n[resource_link name="README.md" uri="{link}"]\n'), texts

    run(body())


def test_audio_is_refused_with_invalid_params(launch, fake):
    """An audio block: an invalid-params error, nothing sent to the model, and the
    session still takes a text prompt."""

    async def body():
        server = fake([{"text": "Text works."}])
        async with launch(fake=server) as agent:
            sid = await agent.new_session()
            with pytest.raises(RequestError) as caught:
                await agent.prompt(sid, "Listen", audio_block(base64.b64encode(b"RIFF....WAVE").decode(), "audio/wav"))
            assert caught.value.code == -32602, (caught.value.code, str(caught.value), caught.value.data)
            assert provider_requests(server) == []
            assert await agent.prompt(sid, "Just text") == "end_turn"
            assert len(provider_requests(server)) == 1

    run(body())


# ---------------------------------------------------------------------------
# 7. Config options
# ---------------------------------------------------------------------------


def test_config_options_apply_from_the_next_prompt(launch, fake):
    """set_config_option `model` -> the next provider request names the new model;
    `reasoning_effort` low -> output_config.effort low; the response carries the new
    current values; unknown values and options are errors that change nothing."""

    async def body():
        server = fake([{"text": "one"}, {"text": "two"}, {"text": "three"}])
        async with launch(fake=server) as agent:
            response = dump(await agent.request(agent.conn.new_session(cwd=str(agent.cwd), mcp_servers=[])))
            sid = response["sessionId"]
            models = model_options(response["configOptions"], "model")
            [pro] = [v for v in models if "deepseek-v4-pro" in v]
            assert await agent.prompt(sid, "first") == "end_turn"

            changed = dump(await agent.request(agent.conn.set_config_option(config_id="model", session_id=sid, value=pro)))
            [model] = [o for o in changed["configOptions"] if o["id"] == "model"]
            assert model["currentValue"] == pro
            assert await agent.prompt(sid, "second") == "end_turn"

            changed = dump(await agent.request(
                agent.conn.set_config_option(config_id="reasoning_effort", session_id=sid, value="low")))
            assert [o["currentValue"] for o in changed["configOptions"] if o["id"] == "reasoning_effort"] == ["low"]
            for config_id, value in [("reasoning_effort", "extreme"), ("model", "no-such-model"), ("colour", "blue")]:
                with pytest.raises(RequestError):
                    await agent.request(agent.conn.set_config_option(config_id=config_id, session_id=sid, value=value))
            assert await agent.prompt(sid, "third") == "end_turn"

        first, second, third = provider_requests(server)
        assert first["body"]["model"] == "deepseek-v4-flash"
        assert first["body"]["output_config"] == {"effort": "high"}
        assert second["body"]["model"] == "deepseek-v4-pro"
        assert second["body"]["output_config"] == {"effort": "high"}
        assert third["body"]["model"] == "deepseek-v4-pro"
        assert third["body"]["output_config"] == {"effort": "low"}

    run(body())


@pytest.mark.parametrize("change", ["reasoning_effort", "mode"])
def test_prompts_right_after_a_setting_changes_run(launch, change):
    """set_config_option (reasoning_effort) or set_mode, then at once a prompt, twenty
    times (scripted echo model): every prompt runs; a setting change must not leave
    the session unusable for a moment."""

    async def body():
        async with launch(args=("--provider", "scripted")) as agent:
            sid = await agent.new_session()
            for i in range(20):
                if change == "mode":
                    await agent.set_mode(sid, ["read-only", "workspace-write"][i % 2])
                else:
                    await agent.request(agent.conn.set_config_option(
                        config_id="reasoning_effort", session_id=sid, value=["low", "high"][i % 2]))
                start = len(agent.frames)
                assert await agent.prompt(sid, f"prompt {i}") == "end_turn", i
                assert "".join(chunk_texts(agent.updates(sid, start), "agent_message_chunk")) == f"prompt {i}"

    run(body())


# ---------------------------------------------------------------------------
# 8. MCP servers
# ---------------------------------------------------------------------------


@pytest.fixture
def mcp_files(base_dir):
    """A per-test marker (on every MCP server's command line) and the stdio server's call log."""
    directory = base_dir / "mcp"
    directory.mkdir()
    marker = f"dsh-acp-mcp-{uuid.uuid4().hex[:12]}"
    yield marker, directory / "calls.jsonl"
    for pid in with_marker(marker):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def called_tools(call_log: Path) -> list[str]:
    if not call_log.exists():
        return []
    entries = [json.loads(line) for line in call_log.read_text().splitlines() if line.strip()]
    return [e["tool"] for e in entries if e["method"] == "tools/call"]


def test_a_stdio_mcp_server_from_session_new(launch, scripted, mcp_files):
    """A stdio server given in session/new: its read-only `echo` runs without asking and
    its text is in the tool_call_update; `add` (not marked read-only) is asked
    through request_permission first, then runs; the server saw both calls; it ends
    with the agent."""
    marker, call_log = mcp_files
    server = McpServerStdio(name="s", command=PYTHON, args=[str(STDIO_SERVER), marker],
                            env=[EnvVariable(name="MCP_CALL_LOG", value=str(call_log))])

    async def body():
        async with launch(model=scripted([
            call("mcp__s__echo", {"text": "hello over acp"}, "m1"),
            call("mcp__s__add", {"a": 2, "b": 40}, "m2"),
            {"text": "Used the server."},
        ])) as agent:
            agent.client.on_permission = choose("allow_once")
            sid = await agent.new_session(mcp_servers=[server])
            assert await agent.prompt(sid, "Use the tools") == "end_turn"
            (echo_id, echo), (add_id, add) = tool_calls(agent.updates(sid)).items()
            assert status_of(echo) == "completed" and "hello over acp" in content_text(final_content(echo))
            assert started(echo).get("kind", "other") == "other"  # an absent kind is `other` in ACP
            assert status_of(add) == "completed" and "42" in content_text(final_content(add))
            [request] = agent.permission_requests(sid)
            assert request["toolCall"]["toolCallId"] == add_id
            assert called_tools(call_log) == ["echo", "add"]
        assert wait_gone(with_marker(marker)) == [], "the MCP server outlived the agent"

    run(body())


def test_an_mcp_call_rejected_never_reaches_the_server(launch, scripted, mcp_files):
    """`add` rejected through request_permission: failed, and the server never got it."""
    marker, call_log = mcp_files
    server = McpServerStdio(name="s", command=PYTHON, args=[str(STDIO_SERVER), marker],
                            env=[EnvVariable(name="MCP_CALL_LOG", value=str(call_log))])

    async def body():
        async with launch(model=scripted([call("mcp__s__add", {"a": 1, "b": 1}, "m1"), {"text": "ok"}])) as agent:
            agent.client.on_permission = choose("reject_once")
            sid = await agent.new_session(mcp_servers=[server])
            assert await agent.prompt(sid, "Add") == "end_turn"
            _, frames = one_call(agent.updates(sid))
            assert status_of(frames) == "failed"
            assert len(agent.permission_requests(sid)) == 1
            assert "add" not in called_tools(call_log)

    run(body())


@pytest.fixture
def http_mcp(base_dir, mcp_files):
    """tests/mcp/http_server.py on a free port of 127.0.0.1: yields its URL."""
    marker, _ = mcp_files
    with http_mcp_server(base_dir / "http-mcp-stderr.txt", marker) as url:
        yield url


def test_an_http_mcp_server_with_headers(launch, scripted, http_mcp):
    """An HTTP server given in session/new, with a header: `whoami` (read-only) answers
    the header the call arrived with, in the tool_call_update."""
    token = f"tok-{uuid.uuid4().hex[:8]}"
    server = HttpMcpServer(type="http", name="web", url=http_mcp, headers=[HttpHeader(name="X-Test-Token", value=token)])

    async def body():
        async with launch(model=scripted([call("mcp__web__whoami", {}, "h1"), {"text": "Asked."}])) as agent:
            sid = await agent.new_session(mcp_servers=[server])
            assert await agent.prompt(sid, "Who am I?") == "end_turn"
            _, frames = one_call(agent.updates(sid))
            assert status_of(frames) == "completed"
            assert token in content_text(final_content(frames))
            assert agent.permission_requests(sid) == []

    run(body())


def test_an_sse_mcp_server_is_refused(launch, scripted):
    """An `sse` server in session/new: a JSON-RPC error that says SSE is not supported."""

    async def body():
        async with launch(model=scripted([{"text": "unused"}])) as agent:
            sse = SseMcpServer(type="sse", name="old", url="http://127.0.0.1:9/sse", headers=[])
            with pytest.raises(RequestError) as caught:
                await agent.request(agent.conn.new_session(cwd=str(agent.cwd), mcp_servers=[sse]))
            message = f"{caught.value} {json.dumps(caught.value.data)}".lower()
            assert "sse" in message, message
            assert await agent.new_session()

    run(body())


# ---------------------------------------------------------------------------
# 9. ACP <-> the SDK profile
# ---------------------------------------------------------------------------


class _Any(BaseModel):
    model_config = {"extra": "allow"}


def sdk_harness(server: FakeModel, dsh_home: Path, workspace: Path) -> DeepSeekHarness:
    return DeepSeekHarness(dsh_bin=str(dsh_bin_path()), dsh_home=str(dsh_home), cwd=str(workspace),
                           provider="deepseek-official", model="deepseek-v4-flash", profile="sdk",
                           base_url=server.base_url, api_key=KEY, request_timeout_seconds=FRAME_TIMEOUT,
                           env={"DSH_RETRY_INITIAL_MS": "5", "DSH_RETRY_MAX_MS": "40"})


def test_a_session_made_over_acp_continues_in_the_sdk(launch, fake, dsh_home, workspace):
    """Prompted over ACP and closed (its lock released at once, the agent still
    running): the official Python SDK resumes it from the same DSH_HOME, its stored
    events hold the ACP turn, and the SDK's next prompt sends the ACP turn as history."""

    async def body():
        server = fake([{"text": "ACP answer."}, {"text": "SDK answer."}])
        async with launch(fake=server) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "ACP question") == "end_turn"
            await agent.request(agent.conn.close_session(session_id=sid))

            def sdk_side():
                with sdk_harness(server, dsh_home, workspace) as h:
                    session = h.resume_session(sid)
                    events = h.client.request("session/events", {"sessionId": sid}, response_model=_Any).model_dump()
                    result = run_bounded(session, "SDK question")
                return events, result

            events, result = await asyncio.wait_for(asyncio.to_thread(sdk_side), RUN_TIMEOUT)
        stored = json.dumps(events["events"])
        assert "ACP question" in stored and "ACP answer." in stored
        assert result.final_response == "SDK answer."
        assert result.finish_reason == "completed"
        last = provider_requests(server)[-1]
        assert "ACP question" in user_texts(last) and "SDK question" in user_texts(last)
        assert "ACP answer." in assistant_texts(last)

    run(body())


def test_a_session_made_by_the_sdk_loads_over_acp(launch, fake, dsh_home, workspace):
    """Made and prompted by the SDK profile: session/load over ACP replays its prompt and
    answer, and the next ACP prompt sends them as history."""
    sid = f"sdk-made-{uuid.uuid4().hex[:8]}"

    async def body():
        server = fake([{"text": "SDK answer."}, {"text": "ACP answer."}])

        def sdk_side():
            with sdk_harness(server, dsh_home, workspace) as h:
                return run_bounded(h.start_session(sid), "SDK question")

        result = await asyncio.wait_for(asyncio.to_thread(sdk_side), RUN_TIMEOUT)
        assert result.final_response == "SDK answer."
        async with launch(fake=server) as agent:
            await agent.request(agent.conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[]))
            replay = agent.updates(sid)
            assert "".join(chunk_texts(replay, "user_message_chunk")) == "SDK question"
            assert "".join(chunk_texts(replay, "agent_message_chunk")) == "SDK answer."
            start = len(agent.frames)
            assert await agent.prompt(sid, "ACP question") == "end_turn"
            assert "".join(chunk_texts(agent.updates(sid, start), "agent_message_chunk")) == "ACP answer."
        last = provider_requests(server)[-1]
        assert user_texts(last)[0] == "SDK question" and "ACP question" in user_texts(last)
        assert "SDK answer." in assistant_texts(last)

    run(body())


# ---------------------------------------------------------------------------
# 10. Robustness
# ---------------------------------------------------------------------------


def test_a_malformed_line_gets_a_parse_error_and_the_connection_goes_on(launch, scripted):
    """A line that is not JSON: a JSON-RPC parse error (-32700, id null); the agent keeps
    serving (a session is created and prompted afterwards)."""

    async def body():
        async with launch(model=scripted([{"text": "Still here."}])) as agent:
            agent.process.stdin.write(b'{"jsonrpc": "2.0", "id": 7, "method": \n')
            await agent.process.stdin.drain()
            error = await agent.wait_for(lambda: [f for f in agent.frames if "error" in f and "method" not in f],
                                         what="the parse error")
            assert error[0]["error"]["code"] == -32700, error
            assert error[0].get("id", "absent") is None, error
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Hello?") == "end_turn"
            assert "".join(chunk_texts(agent.updates(sid), "agent_message_chunk")) == "Still here."

    run(body())


def test_stdin_eof_exits_zero_and_kills_a_running_command(launch, scripted, workspace):
    """The client closes stdin while `bash` runs `sleep 30`: dsh exits with status 0
    within seconds and the sleep process is gone."""
    marker = f"{uuid.uuid4().int % 10**6:06d}"
    pid_file = workspace / "pid.txt"

    async def body():
        async with launch(model=scripted([bash(sleeper(marker, pid_file)), {"text": "unused"}])) as agent:
            sid = await agent.new_session()
            task = asyncio.ensure_future(agent.prompt(sid, "Sleep"))
            pid = int((await wait_file(pid_file)).strip())
            assert alive(pid)
            agent.process.stdin.close()
            code = await asyncio.wait_for(agent.process.wait(), EXIT_TIMEOUT)
            assert code == 0, f"exit status {code}; stderr:\n{agent.stderr_tail()}"
            with contextlib.suppress(Exception):
                await asyncio.wait_for(task, EXIT_TIMEOUT)
            assert wait_gone([pid]) == [], f"the command {pid} outlived dsh"
            assert with_marker(f"30.{marker}") == []

    try:
        run(body())
    finally:
        for pid in with_marker(f"30.{marker}"):
            os.kill(pid, signal.SIGKILL)


# ---------------------------------------------------------------------------
# The client's editor: fs/read_text_file and fs/write_text_file
# ---------------------------------------------------------------------------


def test_file_tools_go_through_the_editor_that_offers_fs(launch, scripted, workspace):
    """A client offering `fs`: `read` shows the editor's unsaved buffer, not
    the disk; `edit` edits that buffer and `write` replaces it, both through
    fs/write_text_file (this editor never saves, so the disk keeps its
    text); the diffs are of the buffer's text."""
    path = workspace / "app.py"
    path.write_text("x = 1  # on disk\n")
    buffers = {str(path): "x = 2  # unsaved\n"}

    async def body():
        async with launch(model=scripted([
            call("read", {"file_path": "app.py"}, "r1"),
            call("edit", {"file_path": "app.py", "old_string": "x = 2", "new_string": "x = 3"}, "e1"),
            call("write", {"file_path": "app.py", "content": "x = 4\n"}, "w1"),
            {"text": "Done."},
        ]), buffers=buffers) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Change x") == "end_turn"
            calls = tool_calls(agent.updates(sid))
            read, edit_, write = (calls[i] for i in ("r1", "e1", "w1"))
            assert "x = 2  # unsaved" in content_text(final_content(read)), read
            assert status_of(edit_) == status_of(write) == "completed", (edit_, write)
            [hunk] = diffs(edit_)
            assert (hunk["oldText"], hunk["newText"]) == ("x = 2  # unsaved", "x = 3  # unsaved"), hunk
            assert agent.client.writes == [(str(path), "x = 3  # unsaved\n"), (str(path), "x = 4\n")]
            assert str(path) in agent.client.reads
        assert path.read_text() == "x = 1  # on disk\n", "a write went to the disk, not the editor"

    run(body())


def test_the_editor_never_sees_a_write_the_sandbox_refuses(launch, scripted, workspace, base_dir):
    """The workspace rules hold before the editor is asked: a `write` outside
    the workspace (workspace-write, no escalation) fails and the client gets
    no fs/write_text_file; one inside goes to the editor."""
    outside = base_dir / "outside.txt"
    inside = workspace / "inside.txt"

    async def body():
        async with launch(model=scripted([
            call("write", {"file_path": str(outside), "content": "no\n"}, "w1"),
            call("write", {"file_path": "inside.txt", "content": "yes\n"}, "w2"),
            {"text": "Done."},
        ]), buffers={}) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Write both") == "end_turn"
            calls = tool_calls(agent.updates(sid))
            assert status_of(calls["w1"]) == "failed", calls["w1"]
            assert status_of(calls["w2"]) == "completed", calls["w2"]
            assert agent.client.writes == [(str(inside), "yes\n")]
        assert not outside.exists()

    run(body())


def test_without_fs_the_file_tools_use_the_disk(launch, scripted, workspace):
    """A client that offers no `fs` gets no file requests: the disk is read
    and written."""
    path = workspace / "plain.txt"
    path.write_text("disk\n")

    async def body():
        async with launch(model=scripted([
            call("read", {"file_path": "plain.txt"}, "r1"),
            call("write", {"file_path": "plain.txt", "content": "new\n"}, "w1"),
            {"text": "Done."},
        ])) as agent:
            sid = await agent.new_session()
            assert await agent.prompt(sid, "Rewrite") == "end_turn"
            assert "disk" in content_text(final_content(tool_calls(agent.updates(sid))["r1"]))
            assert agent.client.reads == [] and agent.client.writes == []
        assert path.read_text() == "new\n"

    run(body())
