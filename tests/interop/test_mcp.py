"""dsh as an MCP client (issue 29), black-box: the runtime under test talks to
real MCP servers — tests/mcp/stdio_server.py and tests/mcp/http_server.py
(the official Python `mcp` SDK) and @modelcontextprotocol/server-everything
(npm, tests/mcp/package.json) — while the fake model server
(dsh-fake-model) scripts the model's tool calls and records each provider
request. The servers are checked on their own in test_mcp_servers.py, so a
failure here points at the runtime.

How the tests read the runtime:
- raw JSON-RPC (`RawClient`): `mcp.server` notifications, `approval/request`
  requests and `session.event` frames are picked out of `raw.frames`;
- the official Python SDK (`deepseek_harness`): `mcp.server` notifications
  through `client.subscribe_notifications(filter)`, approval requests through
  `client.next_request()` / `client.respond()`.

The stdio server appends its PID to `MCP_PID_FILE` on every start and each
request it receives to `MCP_CALL_LOG` (before validating it), and every
server command line carries a per-test marker, so a test can count starts,
tell that a call never reached the server, and check that no server process
outlives the runtime. Nothing here sleeps to make an assertion pass: waits
are upper bounds."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from deepseek_harness import DeepSeekHarness
from deepseek_harness.api import Session
from pydantic import BaseModel

from interop_support import (
    EXIT_TIMEOUT,
    FRAME_TIMEOUT,
    REPO_ROOT,
    alive,
    assert_valid_frames,
    clean_env,
    run_bounded,
    http_mcp_server,
    session_events,
    wait_gone,
    with_marker,
)

KEY = "sk-mcp-test-0000"
MODEL = "deepseek-v4-flash"
SID = "mcp-session"
PYTHON = sys.executable  # the test venv's interpreter: it has the `mcp` package
MCP_DIR = REPO_ROOT / "tests" / "mcp"
STDIO_SERVER = MCP_DIR / "stdio_server.py"
EVERYTHING = MCP_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC")
STDIO_TOOLS = ["add", "crash", "destroy", "echo", "env", "fail", "flood", "garbage", "grow", "hang", "image"]


class _Any(BaseModel):
    """Any JSON object result."""

    model_config = {"extra": "allow"}


# ---------------------------------------------------------------------------
# Processes
# ---------------------------------------------------------------------------


class Servers:
    """One test's MCP server configurations and what they leave behind."""

    def __init__(self, base: Path) -> None:
        self.dir = base / "mcp"
        self.dir.mkdir()
        self.marker = f"dsh-mcp-test-{uuid.uuid4().hex[:12]}"
        self.pid_file = self.dir / "pids.txt"
        self.call_log = self.dir / "calls.jsonl"

    def stdio(self, name: str = "s", env: dict | None = None, **extra) -> dict:
        """An `initialize.mcpServers` entry running stdio_server.py."""
        return {"name": name, "command": PYTHON, "args": [str(STDIO_SERVER), self.marker],
                "env": {"MCP_PID_FILE": str(self.pid_file), "MCP_CALL_LOG": str(self.call_log), **(env or {})},
                **extra}

    def pids(self) -> list[int]:
        """One PID per start of a stdio server of this test, in order."""
        if not self.pid_file.exists():
            return []
        return [int(line) for line in self.pid_file.read_text().split()]

    def called(self) -> list[str]:
        """The tools the stdio servers were asked to call, in arrival order."""
        if not self.call_log.exists():
            return []
        entries = [json.loads(line) for line in self.call_log.read_text().splitlines() if line.strip()]
        return [e["tool"] for e in entries if e["method"] == "tools/call"]

    def running(self) -> list[int]:
        return with_marker(self.marker)


@pytest.fixture(autouse=True)
def servers(base_dir):
    """Autouse, so it is torn down after the runtimes: kills any server a
    broken runtime left behind (tests assert on that themselves)."""
    found = Servers(base_dir)
    yield found
    for pid in found.running():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# ---------------------------------------------------------------------------
# Scripted model replies, provider requests, events
# ---------------------------------------------------------------------------


def call(name: str, arguments: dict, call_id: str = "toolu_1", **extra) -> dict:
    """A model reply calling one tool."""
    return {"blocks": [{"tool_call": {"id": call_id, "name": name, "arguments": arguments}}], **extra}


def provider_requests(model) -> list[dict]:
    return [r for r in model.requests() if r["path"].endswith("/messages")]


def roster(request: dict) -> dict[str, dict]:
    """The tools a provider request offers the model, by name."""
    return {tool["name"]: tool for tool in request["body"].get("tools", [])}


def mcp_names(request: dict, server: str | None = None) -> list[str]:
    prefix = f"mcp__{server}__" if server else "mcp__"
    return sorted(name for name in roster(request) if name.startswith(prefix))


def tool_result_block(request: dict, call_id: str) -> dict:
    """The `tool_result` block answering `call_id` in a provider request."""
    for message in request["body"]["messages"]:
        if isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_result" and block.get("tool_use_id") == call_id:
                    return block
    raise AssertionError(f"no tool_result for {call_id} in the request")


def block_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def text_of(message: dict) -> str:
    return "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")


def events_of(frames: list[dict], kind: str, session: str = SID) -> list[dict]:
    return [e["data"] for e in session_events(frames, session) if e["type"] == kind]


def results_of(frames: list[dict], session: str = SID) -> dict[str, dict]:
    """Tool result messages of a session by call id."""
    return {data["message"]["toolCallId"]: data["message"] for data in events_of(frames, "tool/result", session)}


def server_states(frames: list[dict], name: str) -> list[dict]:
    """The params of the `mcp.server` notifications about one server, in order."""
    return [f["params"] for f in frames if f.get("method") == "mcp.server" and f["params"].get("name") == name]


def approval_requests(frames: list[dict]) -> list[dict]:
    return [f for f in frames if f.get("method") == "approval/request"]


def answer(raw, request: dict, result: dict) -> None:
    raw.send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def assert_server_error(message: dict, server: str = "s") -> str:
    """A tool result that is an error of the MCP server `server`; its text."""
    text = text_of(message)
    assert message["isError"] is True, message
    assert text.startswith(f'Error: MCP server "{server}"'), text
    return text


def names_parameter(text: str, parameter: str) -> bool:
    """Whether an error text names the parameter (quoted, as a path, or after
    a word such as "property"), not merely contains the letter."""
    p = re.escape(parameter)
    return re.search(rf"""(["'`/.\[(]{p}\b|\b{p}["'`:\])]|\b(?:property|parameter|field|argument|key)s?\s+{p}\b)""",
                     text) is not None


# ---------------------------------------------------------------------------
# Runtimes
# ---------------------------------------------------------------------------


@pytest.fixture
def runtime(make_raw, fake_model, dsh_home, home, workspace):
    """runtime(replies, mcp_servers=None, agents=(), env=None, args=None, **initialize)
    -> (RawClient, FakeModel): dsh on the deepseek-official provider against a
    fake model server playing `replies`, initialized with `mcpServers`."""

    def start(replies, mcp_servers=None, agents=(), env=None, args=None, **initialize):
        model = fake_model(replies, agents)
        raw = make_raw(env=clean_env(dsh_home, home, DEEPSEEK_BASE_URL=model.base_url, DEEPSEEK_API_KEY=KEY,
                                     **(env or {})), args=args)
        if mcp_servers is not None:
            initialize["mcpServers"] = mcp_servers
        raw.initialize(workspace, model=MODEL, provider="deepseek-official", **initialize)
        return raw, model

    return start


def turn(raw, text: str = "go", session: str = SID) -> None:
    """Prompt and wait (bounded) for the session to go idle."""
    start = len(raw.frames)
    raw.prompt(session, text)
    raw.status(session, "idle", start=start)


def wait_event(raw, kind: str, session: str = SID, **match) -> dict:
    _, frame = raw.wait_for(
        lambda f: f.get("method") == "session.event" and f["params"]["sessionId"] == session
        and f["params"]["event"]["type"] == kind
        and all(f["params"]["event"]["data"].get(k) == v for k, v in match.items()),
        what=f"{kind} {match} in {session}")
    return frame["params"]["event"]["data"]


@pytest.fixture
def sdk(dsh_bin, dsh_home, workspace, home, fake_model):
    """sdk(replies, mcp_servers, **initialize) -> (DeepSeekHarness, FakeModel):
    the official Python SDK with an API key and base URL of its own, whose one
    `initialize` carries dsh's extension fields (mcpServers, clientCapabilities)."""
    harnesses: list[DeepSeekHarness] = []

    def start(replies, mcp_servers, **initialize):
        model = fake_model(replies)
        harness = DeepSeekHarness(dsh_bin=str(dsh_bin), dsh_home=str(dsh_home), cwd=str(workspace),
                                  base_url=model.base_url, api_key=KEY, env={"HOME": str(home)},
                                  request_timeout_seconds=FRAME_TIMEOUT)
        harnesses.append(harness)
        harness.client.start()
        harness.client.request("initialize", {"cwd": str(workspace), "provider": "deepseek-official", "model": MODEL,
                                              "mcpServers": mcp_servers, **initialize}, response_model=_Any)
        return harness, model

    yield start
    for harness in harnesses:
        harness.close()


@pytest.fixture(scope="session")
def stdio_listing() -> dict[str, dict]:
    """What stdio_server.py lists, by tool name, as the `mcp` SDK's own client sees it."""
    import anyio
    from mcp import Client, StdioServerParameters

    async def main():
        with anyio.fail_after(FRAME_TIMEOUT):
            params = StdioServerParameters(command=PYTHON, args=[str(STDIO_SERVER)], env=dict(os.environ))
            async with Client(params, mode="legacy") as client:
                return (await client.list_tools()).tools

    return {tool.name: tool.model_dump(by_alias=True, exclude_none=True, mode="json") for tool in anyio.run(main)}


# ---------------------------------------------------------------------------
# initialize
# ---------------------------------------------------------------------------


def test_a_client_that_declares_capabilities_is_told_mcp(make_raw, workspace):
    raw = make_raw()
    result = raw.initialize(workspace, clientCapabilities={"approvals": True})
    assert result["capabilities"]["mcp"] is True


@pytest.mark.parametrize(("config", "field"), [
    ([{"name": "bad name!", "command": "true"}], "mcpServers[0].name"),
    ([{"name": "n" * 33, "command": "true"}], "mcpServers[0].name"),
    ([{"name": "s", "command": "true"}, {"name": "s", "command": "false"}], "mcpServers[1].name"),
])
def test_bad_server_names_are_refused_naming_the_field(make_raw, workspace, config, field):
    raw = make_raw()
    response = raw.request("initialize", {"cwd": str(workspace), "provider": "scripted", "model": "echo",
                                          "mcpServers": config})
    assert "error" in response, response
    assert response["error"]["code"] == -32603, response
    assert field in response["error"]["message"], response


def test_a_url_that_is_not_http_is_refused_at_initialize(make_raw, workspace):
    raw = make_raw()
    response = raw.request("initialize", {"cwd": str(workspace), "provider": "scripted", "model": "echo",
                                          "mcpServers": [{"name": "web", "url": "ftp://127.0.0.1/mcp"}]})
    assert "error" in response, response
    assert "url" in response["error"]["message"].lower(), response


def test_without_servers_there_are_no_mcp_tools_or_notifications(runtime):
    raw, model = runtime([{"text": "ok"}], clientCapabilities={"approvals": True})
    turn(raw)
    [request] = provider_requests(model)
    assert mcp_names(request) == []
    assert "bash" in roster(request)
    assert [f for f in raw.frames if f.get("method") == "mcp.server"] == []


# ---------------------------------------------------------------------------
# Roster and calls
# ---------------------------------------------------------------------------


def test_servers_start_lazily_and_the_roster_carries_their_schemas(runtime, servers, stdio_listing):
    raw, model = runtime([{"text": "ok"}], [servers.stdio()])
    # A runtime that started servers at initialize has had the time to.
    time.sleep(0.5)
    assert not servers.pid_file.exists(), "a server was started before any prompt"
    assert servers.running() == []
    turn(raw)
    [request] = provider_requests(model)
    tools = roster(request)
    assert mcp_names(request) == [f"mcp__s__{name}" for name in STDIO_TOOLS]
    for name, listed in stdio_listing.items():
        offered = tools[f"mcp__s__{name}"]
        assert offered["input_schema"] == listed["inputSchema"], name
        assert listed["description"] in offered["description"], name
    assert "bash" in tools, "the built-in tools stay"
    assert len(servers.pids()) == 1


def test_calls_round_trip_text_image_and_tool_errors(runtime, servers):
    raw, model = runtime([
        call("mcp__s__echo", {"text": "hello mcp"}, "t1"),
        call("mcp__s__add", {"a": 2, "b": 40}, "t2"),
        call("mcp__s__image", {}, "t3"),
        call("mcp__s__fail", {"message": "it broke"}, "t4"),
        {"text": "done"},
    ], [servers.stdio()])
    turn(raw)
    calls = events_of(raw.frames, "tool/call")
    assert [(c["callId"], c["name"]) for c in calls] == [
        ("t1", "mcp__s__echo"), ("t2", "mcp__s__add"), ("t3", "mcp__s__image"), ("t4", "mcp__s__fail")]
    assert json.loads(calls[1]["arguments"]) == {"a": 2, "b": 40}
    results = results_of(raw.frames)
    assert (text_of(results["t1"]), results["t1"]["isError"]) == ("hello mcp", False)
    assert (text_of(results["t2"]), results["t2"]["isError"]) == ("42", False)
    # The image is an image block, stored as an attachment like read_image's.
    digest = hashlib.sha256(PNG).hexdigest()
    images = [b for b in results["t3"]["content"] if b.get("type") == "image"]
    assert results["t3"]["isError"] is False
    assert len(images) == 1, results["t3"]
    assert images[0]["attachment"]["attachmentId"] == f"sha256:{digest}"
    assert images[0]["attachment"]["mediaType"] == "image/png"
    assert results["t4"]["isError"] is True and "it broke" in text_of(results["t4"])
    # The model saw each result in the next request.
    requests = provider_requests(model)
    assert len(requests) == 5
    first = tool_result_block(requests[1], "t1")
    assert (block_text(first), first.get("is_error", False)) == ("hello mcp", False)
    assert block_text(tool_result_block(requests[2], "t2")) == "42"
    assert digest[:8] in json.dumps(tool_result_block(requests[3], "t3"))
    failed = tool_result_block(requests[4], "t4")
    assert failed["is_error"] is True and "it broke" in block_text(failed)
    assert servers.called() == ["echo", "add", "image", "fail"]


def test_arguments_are_validated_against_the_schema_before_the_call(runtime, servers):
    raw, model = runtime([
        call("mcp__s__add", {"a": "two", "b": 3}, "t1"),
        call("mcp__s__add", {"a": 1}, "t2"),
        call("mcp__s__echo", {"text": "valid"}, "t3"),
        {"text": "done"},
    ], [servers.stdio()])
    turn(raw)
    results = results_of(raw.frames)
    assert results["t1"]["isError"] is True and names_parameter(text_of(results["t1"]), "a"), results["t1"]
    assert results["t2"]["isError"] is True and names_parameter(text_of(results["t2"]), "b"), results["t2"]
    assert text_of(results["t3"]) == "valid"
    assert servers.called() == ["echo"], "an invalid call reached the server"


def test_a_tools_list_changed_notification_updates_the_next_request(runtime, servers):
    raw, model = runtime([
        call("mcp__s__grow", {}, "t1"),
        call("mcp__s__late", {"x": "q"}, "t2"),
        {"text": "done"},
    ], [servers.stdio()])
    turn(raw)
    requests = provider_requests(model)
    assert "mcp__s__late" not in roster(requests[0])
    assert "mcp__s__late" in roster(requests[1])
    assert roster(requests[1])["mcp__s__late"]["input_schema"]["properties"]["x"]["type"] == "string"
    results = results_of(raw.frames)
    assert results["t1"]["isError"] is False
    assert (text_of(results["t2"]), results["t2"]["isError"]) == ("late q", False)


def test_the_official_runtime_resumes_a_session_whose_tools_changed(sdk, servers, fake_model, dsh_home, workspace,
                                                                    home):
    """A session that used MCP tools, whose roster changed mid-turn (its log
    holds a second `request/header`, reason `series`), resumes in the official
    runtime, which has no MCP, and carries its MCP calls in the history."""
    from test_sessions import http_harness, official as official_fixture  # noqa: F401

    harness, _ = sdk([call("mcp__s__grow", {}, "t1"), call("mcp__s__late", {"x": "q"}, "t2"), {"text": "done"}],
                     [servers.stdio()])
    result = run_bounded(Session(harness, SID), "go")
    assert result.finish_reason == "completed"
    headers = [e["data"]["reason"] for e in result.events if e["type"] == "request/header"]
    assert headers == ["initial", "series"], headers
    harness.close()
    import deepseek_harness_runtime
    official = (Path(deepseek_harness_runtime.__file__).parent / "runtime"
                / "deepseek-harness-sdk-runtime-linux-x64")
    server = fake_model([{"text": "resumed"}])
    with http_harness(official, server, dsh_home, workspace, home) as h:
        resumed = run_bounded(h.resume_session(SID), "and now?")
    assert (resumed.final_response, resumed.finish_reason) == ("resumed", "completed")
    said = json.dumps(server.requests()[0]["body"]["messages"])
    assert "late q" in said


def test_a_long_text_is_cut_and_saved_whole_to_a_named_file(runtime, servers):
    raw, model = runtime([call("mcp__s__flood", {"megabytes": 1}, "t1"), {"text": "done"}], [servers.stdio()])
    turn(raw)
    message = results_of(raw.frames)["t1"]
    text = text_of(message)
    assert message["isError"] is False
    assert 0 < len(text.encode()) < 64 * 1024, len(text)
    whole = "x" * (1024 * 1024)
    paths = [p.rstrip(".,:;") for p in re.findall(r"""/[^\s"'`<>()\[\]]+""", text)]
    saved = [p for p in paths if Path(p).is_file() and Path(p).read_text(errors="replace") == whole]
    assert saved, f"no file named in the result holds the whole text: {text[-500:]!r}"
    assert len(json.dumps(provider_requests(model)[1]["body"])) < 512 * 1024


# ---------------------------------------------------------------------------
# Failures of the server
# ---------------------------------------------------------------------------


def test_a_crash_mid_call_is_an_error_and_the_next_call_restarts_the_server(runtime, servers):
    raw, model = runtime([
        call("mcp__s__crash", {}, "t1"),
        # The delay lets the restart back-off (0.5 s after the first start) pass.
        call("mcp__s__echo", {"text": "back again"}, "t2", delay_ms=1000),
        {"text": "done"},
    ], [servers.stdio()])
    turn(raw)
    results = results_of(raw.frames)
    assert "closed the connection" in assert_server_error(results["t1"])
    assert (text_of(results["t2"]), results["t2"]["isError"]) == ("back again", False)
    pids = servers.pids()
    assert len(pids) == 2 and pids[0] != pids[1], pids
    assert not alive(pids[0])
    assert "closed the connection" in block_text(tool_result_block(provider_requests(model)[1], "t1"))


def test_a_call_past_its_timeout_is_an_error(runtime, servers):
    raw, _ = runtime([call("mcp__s__hang", {"seconds": 60}, "t1"), {"text": "done"}],
                     [servers.stdio(timeoutMs=1500)])
    turn(raw)
    text = assert_server_error(results_of(raw.frames)["t1"])
    assert "did not answer within 1500 ms" in text, text
    # The server is still busy with the call; shutdown stops it all the same.
    pids = servers.pids()
    assert raw.shutdown() == 0
    assert wait_gone(pids) == []


def test_a_hanging_call_does_not_stall_another_session(runtime, servers):
    agents = [
        {"when": "SLOW-TASK", "replies": [call("mcp__s__hang", {"seconds": 60}, "h1"), {"text": "slow done"}]},
        {"when": "FAST-TASK", "replies": [call("mcp__s__echo", {"text": "fast"}, "e1"), {"text": "fast done"}]},
    ]
    raw, _ = runtime([{"text": "unused"}], [servers.stdio()], agents=agents)
    raw.prompt("slow", "SLOW-TASK please")
    wait_event(raw, "tool/call", session="slow", name="mcp__s__hang")
    deadline = time.monotonic() + FRAME_TIMEOUT
    while "hang" not in servers.called() and time.monotonic() < deadline:
        time.sleep(0.02)  # polling interval only
    assert "hang" in servers.called(), "the hanging call never reached the server"
    turn(raw, "FAST-TASK please", session="fast")
    assert text_of(results_of(raw.frames, "fast")["e1"]) == "fast"
    assert results_of(raw.frames, "slow") == {}, "the hanging call finished: it did not hang"
    # Both sessions used the one server process.
    pids = servers.pids()
    assert len(pids) == 1
    assert raw.shutdown() == 0
    assert wait_gone(pids) == []


@pytest.mark.parametrize(("tool", "arguments"), [("flood", {"megabytes": 2}), ("garbage", {})])
def test_an_oversized_message_or_garbage_drops_the_connection(runtime, servers, tool, arguments):
    # The timeout only bounds a runtime that ignores the fault.
    raw, model = runtime([
        call(f"mcp__s__{tool}", arguments, "t1"),
        call("mcp__s__echo", {"text": "still here"}, "t2", delay_ms=1000),
        {"text": "done"},
    ], [servers.stdio(timeoutMs=20000)], env={"DSH_MCP_MESSAGE_MAX_BYTES": "1048576"})
    turn(raw)
    results = results_of(raw.frames)
    text = assert_server_error(results["t1"])
    assert "did not answer" not in text, f"the runtime waited for the timeout: {text}"
    assert len(text) < 64 * 1024
    assert (text_of(results["t2"]), results["t2"]["isError"]) == ("still here", False)
    assert len(servers.pids()) == 2, "the dropped connection's server was not replaced"
    assert len(json.dumps(provider_requests(model)[1]["body"])) < 512 * 1024
    assert_valid_frames(raw)  # nothing of the server's leaked onto the runtime's stdout


def test_a_server_that_cannot_start_fails_its_calls_and_says_so(runtime, servers):
    ghost = {"name": "ghost", "command": str(servers.dir / "no-such-mcp-server")}
    raw, model = runtime([call("mcp__ghost__echo", {"text": "x"}, "t1"), {"text": "done"}], [servers.stdio(), ghost])
    turn(raw)
    text = assert_server_error(results_of(raw.frames)["t1"], "ghost")
    assert "could not start" in text, text
    assert mcp_names(provider_requests(model)[0], "ghost") == []
    assert mcp_names(provider_requests(model)[0], "s") == [f"mcp__s__{name}" for name in STDIO_TOOLS]
    failed = [p for p in server_states(raw.frames, "ghost") if p["state"] == "failed"]
    assert failed and isinstance(failed[0].get("error"), str) and failed[0]["error"], server_states(raw.frames, "ghost")


def test_server_state_notifications_go_starting_then_ready(runtime, servers):
    raw, _ = runtime([call("mcp__s__echo", {"text": "x"}, "t1"), {"text": "done"}], [servers.stdio()])
    assert server_states(raw.frames, "s") == [], "a notification before any prompt"
    turn(raw)
    states = server_states(raw.frames, "s")
    kinds = [p["state"] for p in states]
    assert "starting" in kinds and "ready" in kinds, states
    assert kinds.index("starting") < kinds.index("ready"), states
    assert states[kinds.index("ready")]["tools"] == len(STDIO_TOOLS)
    assert "failed" not in kinds
    assert kinds.count("starting") == 1, "the server was started twice"


# ---------------------------------------------------------------------------
# Environment and configuration sources
# ---------------------------------------------------------------------------


def test_credentials_reach_a_server_only_by_name(sdk, servers, home):
    env = {"PASSED": "${DEEPSEEK_API_KEY}", "DEFAULTED": "${DSH_MCP_TEST_SURELY_UNSET:-fallback}"}
    asked = ["DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "PASSED", "DEFAULTED", "HOME"]
    harness, _ = sdk([*(call("mcp__s__env", {"name": n}, f"t{i}") for i, n in enumerate(asked)), {"text": "done"}],
                     [servers.stdio(env=env)])
    result = run_bounded(Session(harness, SID), "go")
    assert result.final_response == "done"
    results = {e["data"]["message"]["toolCallId"]: text_of(e["data"]["message"])
               for e in result.events if e["type"] == "tool/result"}
    assert [results[f"t{i}"] for i in range(len(asked))] == ["<unset>", "<unset>", KEY, "fallback", str(home)]


def write_project_file(workspace: Path, servers: Servers, name: str, env: dict) -> None:
    config = {"command": PYTHON, "args": [str(STDIO_SERVER), servers.marker],
              "env": {"MCP_PID_FILE": str(servers.pid_file), "MCP_CALL_LOG": str(servers.call_log), **env}}
    (workspace / ".mcp.json").write_text(json.dumps({"mcpServers": {name: config}}))


def test_the_project_file_is_ignored_unless_asked_for(runtime, servers, workspace):
    write_project_file(workspace, servers, "proj", {})
    raw, model = runtime([{"text": "ok"}])
    turn(raw)
    assert mcp_names(provider_requests(model)[0]) == []
    assert not servers.pid_file.exists() and servers.running() == []


def test_the_project_file_is_used_with_project_mcp_and_expands_no_credential(runtime, servers, workspace):
    write_project_file(workspace, servers, "proj", {"LEAK": "pre-${DEEPSEEK_API_KEY}-post"})
    raw, model = runtime([call("mcp__proj__env", {"name": "LEAK"}, "t1"), {"text": "done"}], projectMcp=True)
    turn(raw)
    assert mcp_names(provider_requests(model)[0]) == [f"mcp__proj__{name}" for name in STDIO_TOOLS]
    assert text_of(results_of(raw.frames)["t1"]) == "pre--post"


def test_a_server_named_in_initialize_wins_over_the_project_files(runtime, servers, workspace):
    write_project_file(workspace, servers, "s", {"TAG": "from-project"})
    raw, _ = runtime([call("mcp__s__env", {"name": "TAG"}, "t1"), {"text": "done"}],
                     [servers.stdio(env={"TAG": "from-initialize"})], projectMcp=True)
    turn(raw)
    assert text_of(results_of(raw.frames)["t1"]) == "from-initialize"
    assert len(servers.pids()) == 1


def test_servers_from_a_patch_overlay_are_offered(runtime, servers, base_dir):
    overlay = base_dir / "mcp-overlay.yaml"
    config = {"command": PYTHON, "args": [str(STDIO_SERVER), servers.marker],
              "env": {"MCP_PID_FILE": str(servers.pid_file), "MCP_CALL_LOG": str(servers.call_log)}}
    overlay.write_text(json.dumps({"mcpServers": {"ov": config}}))  # JSON is YAML
    raw, model = runtime([call("mcp__ov__add", {"a": 20, "b": 22}, "t1"), {"text": "done"}],
                         args=["--profile", "sdk", "--patch", str(overlay)])
    turn(raw)
    assert mcp_names(provider_requests(model)[0]) == [f"mcp__ov__{name}" for name in STDIO_TOOLS]
    assert text_of(results_of(raw.frames)["t1"]) == "42"


def test_headless_takes_servers_from_an_mcp_file(dsh_bin, fake_model, servers, dsh_home, home, workspace):
    """`dsh headless --mcp <file>`: the file's servers serve the task's tool
    calls, and none is left running when the command exits."""
    config = {"command": PYTHON, "args": [str(STDIO_SERVER), servers.marker],
              "env": {"MCP_PID_FILE": str(servers.pid_file), "MCP_CALL_LOG": str(servers.call_log)}}
    mcp_file = workspace / "servers.json"
    mcp_file.write_text(json.dumps({"mcpServers": {"cli": config}}))
    model = fake_model([call("mcp__cli__add", {"a": 40, "b": 2}, "t1"), {"text": "the sum is 42"}])
    env = clean_env(dsh_home, home, DEEPSEEK_BASE_URL=model.base_url, DEEPSEEK_API_KEY=KEY)
    done = subprocess.run([str(dsh_bin), "headless", "--provider", "deepseek-official", "--model", MODEL,
                           "--mcp", "servers.json", "add", "them"], cwd=workspace, env=env,
                          capture_output=True, text=True, timeout=EXIT_TIMEOUT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "the sum is 42"
    assert servers.called() == ["add"]
    second = provider_requests(model)[1]
    assert block_text(tool_result_block(second, "t1")) == "42"
    assert wait_gone(servers.pids()) == []


def test_headless_refuses_an_unusable_mcp_file(dsh_bin, dsh_home, home, workspace):
    bad = workspace / "bad.json"
    bad.write_text(json.dumps({"mcpServers": {"x": {"url": "ftp://example.invalid/"}}}))
    done = subprocess.run([str(dsh_bin), "headless", "--mcp", "bad.json", "hi"], cwd=workspace,
                          env=clean_env(dsh_home, home), capture_output=True, text=True, timeout=EXIT_TIMEOUT)
    assert done.returncode == 1
    assert "mcpServers.x.url" in done.stderr, done.stderr


# ---------------------------------------------------------------------------
# Sharing and shutdown
# ---------------------------------------------------------------------------


def test_sessions_naming_the_same_server_share_one_process(sdk, servers):
    harness, _ = sdk([call("mcp__s__echo", {"text": "one"}, "t1"), {"text": "first done"},
                      call("mcp__s__echo", {"text": "two"}, "t2"), {"text": "second done"}], [servers.stdio()])
    states = harness.client.subscribe_notifications(lambda n: n.method == "mcp.server")
    first = run_bounded(Session(harness, "mcp-a"), "go")
    second = run_bounded(Session(harness, "mcp-b"), "go")
    assert (first.final_response, second.final_response) == ("first done", "second done")
    assert len(servers.pids()) == 1
    assert servers.called() == ["echo", "echo"]
    seen: list = []
    states.drain(seen.append)
    kinds = [n.payload["state"] for n in seen if n.payload.get("name") == "s"]
    assert kinds.count("starting") == 1 and "ready" in kinds, kinds


@pytest.mark.parametrize("how", ["shutdown", "end-of-input", "SIGTERM"])
def test_no_server_process_outlives_the_runtime(runtime, servers, how):
    raw, _ = runtime([call("mcp__s__echo", {"text": "x"}, "t1"), {"text": "done"}], [servers.stdio()])
    turn(raw)
    pids = servers.pids()
    assert len(pids) == 1 and alive(pids[0])
    if how == "shutdown":
        assert raw.shutdown() == 0
    elif how == "end-of-input":
        raw.close_stdin()
        assert raw.wait_exit() == 0
    else:
        raw.proc.send_signal(signal.SIGTERM)
        assert raw.wait_exit() == 0
    assert wait_gone(pids) == [], "a server process outlived the runtime"
    assert servers.running() == []


# ---------------------------------------------------------------------------
# Streamable HTTP
# ---------------------------------------------------------------------------


@pytest.fixture
def http_server(base_dir, servers):
    """http_server.py on a free port of 127.0.0.1: yields its URL."""
    with http_mcp_server(base_dir / "http-server-stderr.txt", servers.marker) as url:
        yield url


@pytest.mark.parametrize(("configured", "expected"), [("tok-literal", "tok-literal"), ("${MCP_TEST_TOKEN}", "tok-from-env")])
def test_an_http_server_is_offered_called_and_sent_the_configured_headers(runtime, http_server, stdio_listing,
                                                                          configured, expected):
    web = {"name": "web", "url": http_server, "headers": {"X-Test-Token": configured}}
    raw, model = runtime([call("mcp__web__add", {"a": 1, "b": 2}, "t1"), call("mcp__web__whoami", {}, "t2"),
                          {"text": "done"}], [web], env={"MCP_TEST_TOKEN": "tok-from-env"})
    turn(raw)
    request = provider_requests(model)[0]
    assert mcp_names(request) == ["mcp__web__add", "mcp__web__echo", "mcp__web__hang", "mcp__web__whoami"]
    # http_server.py's add is stdio_server.py's: the same schema.
    assert roster(request)["mcp__web__add"]["input_schema"] == stdio_listing["add"]["inputSchema"]
    results = results_of(raw.frames)
    assert (text_of(results["t1"]), results["t1"]["isError"]) == ("3", False)
    assert text_of(results["t2"]) == expected


def test_an_http_call_past_its_timeout_is_an_error(runtime, http_server):
    web = {"name": "web", "url": http_server, "timeoutMs": 1500}
    raw, _ = runtime([call("mcp__web__hang", {"seconds": 60}, "t1"), call("mcp__web__echo", {"text": "ok"}, "t2"),
                      {"text": "done"}], [web])
    turn(raw)
    results = results_of(raw.frames)
    assert "did not answer within 1500 ms" in assert_server_error(results["t1"], "web")
    assert text_of(results["t2"]) == "ok"


# ---------------------------------------------------------------------------
# @modelcontextprotocol/server-everything (npm), over stdio
# ---------------------------------------------------------------------------


def test_server_everything_is_offered_and_answers(runtime, servers):
    if not EVERYTHING.is_file():
        pytest.fail(f"{EVERYTHING} is missing: run `npm ci` in {MCP_DIR}")
    everything = {"name": "everything", "command": "node", "args": [str(EVERYTHING), "stdio", servers.marker]}
    raw, model = runtime([
        call("mcp__everything__echo", {"message": "hi there"}, "t1"),
        call("mcp__everything__get-resource-links", {"count": 2}, "t2"),
        call("mcp__everything__get-resource-reference", {"resourceType": "Text", "resourceId": 1}, "t3"),
        {"text": "done"},
    ], [everything])
    turn(raw)
    tools = roster(provider_requests(model)[0])
    assert {"mcp__everything__echo", "mcp__everything__get-sum", "mcp__everything__get-tiny-image"} <= set(tools)
    assert tools["mcp__everything__echo"]["input_schema"]["properties"]["message"]["type"] == "string"
    results = results_of(raw.frames)
    assert (text_of(results["t1"]), results["t1"]["isError"]) == ("Echo: hi there", False)
    # A resource link is a text block naming its URI; an embedded resource too, with its text.
    links = text_of(results["t2"])
    assert "demo://resource/dynamic/blob/1" in links and "demo://resource/dynamic/text/2" in links, links
    reference = text_of(results["t3"])
    assert "Resource 1: This is a plaintext resource" in reference, reference
    pids = with_marker(servers.marker)
    assert len(pids) == 1
    assert raw.shutdown() == 0
    assert wait_gone(pids) == []


# ---------------------------------------------------------------------------
# Approvals
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("decision", ["reject", "allow-once"])
def test_a_destructive_tool_is_asked_about_and_a_read_only_one_is_not(runtime, servers, decision):
    raw, _ = runtime([
        call("mcp__s__echo", {"text": "safe"}, "t1"),
        call("mcp__s__destroy", {"path": "/srv/data"}, "t2"),
        {"text": "done"},
    ], [servers.stdio()], clientCapabilities={"approvals": True})
    raw.prompt(SID, "go")
    _, request = raw.wait_for(lambda f: f.get("method") == "approval/request", what="approval/request")
    params = request["params"]
    assert (params["toolName"], params["callId"], params["sessionId"]) == ("mcp__s__destroy", "t2", SID)
    assert params["arguments"] == {"path": "/srv/data"}
    # The read-only echo ran before, unasked; destroy waits for the answer.
    assert text_of(results_of(raw.frames)["t1"]) == "safe"
    assert servers.called() == ["echo"]
    answer(raw, request, {"decision": decision, "message": "Not today."})
    raw.status(SID, "idle")
    assert len(approval_requests(raw.frames)) == 1
    result = results_of(raw.frames)["t2"]
    if decision == "reject":
        assert result["isError"] is True
        assert servers.called() == ["echo"], "a rejected call reached the server"
    else:
        assert (text_of(result), result["isError"]) == ("destroyed /srv/data", False)
        assert servers.called() == ["echo", "destroy"]
    outcomes = [d["outcome"] for d in events_of(raw.frames, "approval/decided")]
    assert outcomes == ["rejected" if decision == "reject" else "approved"]


def test_allow_session_covers_the_tool_for_the_rest_of_the_session(runtime, servers):
    raw, _ = runtime([
        call("mcp__s__destroy", {"path": "/a"}, "t1"),
        call("mcp__s__destroy", {"path": "/b"}, "t2"),
        {"text": "done"},
    ], [servers.stdio()], clientCapabilities={"approvals": True})
    raw.prompt(SID, "go")
    _, request = raw.wait_for(lambda f: f.get("method") == "approval/request", what="approval/request")
    answer(raw, request, {"decision": "allow-session"})
    raw.status(SID, "idle")
    assert len(approval_requests(raw.frames)) == 1
    results = results_of(raw.frames)
    assert [text_of(results[c]) for c in ("t1", "t2")] == ["destroyed /a", "destroyed /b"]


def test_approval_rules_decide_before_anyone_is_asked(runtime, servers):
    rules = {"deny": [{"tool": "mcp__s__destroy"}], "allow": [{"tool": "mcp__s__*"}]}
    raw, _ = runtime([
        call("mcp__s__destroy", {"path": "/a"}, "t1"),
        call("mcp__s__add", {"a": 1, "b": 2}, "t2"),
        {"text": "done"},
    ], [servers.stdio()], clientCapabilities={"approvals": True}, approvalRules=rules)
    turn(raw)
    assert approval_requests(raw.frames) == []
    results = results_of(raw.frames)
    assert results["t1"]["isError"] is True
    assert (text_of(results["t2"]), results["t2"]["isError"]) == ("3", False)
    assert servers.called() == ["add"]


def test_a_read_only_session_refuses_a_tool_not_annotated_read_only(runtime, servers):
    raw, _ = runtime([
        call("mcp__s__echo", {"text": "safe"}, "t1"),
        call("mcp__s__add", {"a": 1, "b": 2}, "t2"),
        {"text": "done"},
    ], [servers.stdio()], env={"DSH_PERMISSION_MODE": "read-only"})
    turn(raw)
    results = results_of(raw.frames)
    assert (text_of(results["t1"]), results["t1"]["isError"]) == ("safe", False)
    assert results["t2"]["isError"] is True
    assert text_of(results["t2"]).startswith('Error: MCP tool "mcp__s__add" is not read-only'), text_of(results["t2"])
    assert servers.called() == ["echo"]


def test_the_official_sdk_answers_an_mcp_approval_and_sees_server_states(sdk, servers):
    harness, _ = sdk([call("mcp__s__destroy", {"path": "/x"}, "t1"), {"text": "done"}], [servers.stdio()],
                     clientCapabilities={"approvals": True})
    states = harness.client.subscribe_notifications(lambda n: n.method == "mcp.server")
    asked = []

    def approver():
        request = harness.client.next_request()
        asked.append(request)
        harness.client.respond(request.id, {"decision": "allow-once"})

    thread = threading.Thread(target=approver, daemon=True)
    thread.start()
    result = run_bounded(Session(harness, SID), "go")
    thread.join(5)
    assert [(r.method, r.payload["toolName"]) for r in asked] == [("approval/request", "mcp__s__destroy")]
    tool_results = [e["data"]["message"] for e in result.events if e["type"] == "tool/result"]
    assert [text_of(m) for m in tool_results] == ["destroyed /x"]
    seen: list = []
    states.drain(seen.append)
    kinds = [n.payload["state"] for n in seen if n.payload.get("name") == "s"]
    assert kinds[:1] == ["starting"] and "ready" in kinds, kinds
