"""The MCP servers that test_mcp.py puts behind dsh, checked on their own with
the official Python `mcp` SDK's client (and, where that client would hide
what the server does on the wire, a raw JSON-RPC line client): a failure here
is a broken test server, not a broken runtime.

Servers: tests/mcp/stdio_server.py, tests/mcp/http_server.py and the npm
package @modelcontextprotocol/server-everything (tests/mcp/package.json;
`npm ci` in tests/mcp installs it)."""

from __future__ import annotations

import base64
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path

import anyio
import pytest

from interop_support import FRAME_TIMEOUT, REPO_ROOT, alive, http_mcp_server, wait_gone

from mcp import Client, StdioServerParameters  # the `mcp` test dependency (scripts/test.sh installs it)

MCP_DIR = REPO_ROOT / "tests" / "mcp"
STDIO_SERVER = MCP_DIR / "stdio_server.py"
EVERYTHING = MCP_DIR / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC"
STDIO_TOOLS = {"echo", "add", "image", "fail", "crash", "hang", "flood", "garbage", "env", "grow", "destroy"}


def bounded(coro_fn, timeout: float = FRAME_TIMEOUT):
    """Run an async test body with an upper bound on its time."""
    async def main():
        with anyio.fail_after(timeout):
            return await coro_fn()
    return anyio.run(main)


def stdio_params(**env: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=[str(STDIO_SERVER)], env={**os.environ, **env})


def text(result) -> str:
    return "".join(block.text for block in result.content if block.type == "text")


# ---------------------------------------------------------------------------
# A raw newline-delimited JSON-RPC client for the stdio server
# ---------------------------------------------------------------------------


class RawMcp:
    """Spawns the stdio server and talks JSON-RPC lines to it, keeping every stdout line."""

    def __init__(self, tmp: Path, **env: str) -> None:
        self.stderr = open(tmp / f"stderr-{time.monotonic_ns()}.txt", "wb")
        self.proc = subprocess.Popen([sys.executable, str(STDIO_SERVER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=self.stderr, env={**os.environ, **env})
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self.next_id = 0

    def _read(self) -> None:
        for line in iter(self.proc.stdout.readline, b""):
            self.lines.put(line)
        self.lines.put(None)

    def line(self, timeout: float = FRAME_TIMEOUT) -> bytes | None:
        """The next stdout line (None: stdout closed)."""
        try:
            return self.lines.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"no line from the server within {timeout}s") from None

    def send(self, frame: dict) -> None:
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict) -> int:
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        return self.next_id

    def response(self, request_id: int) -> dict:
        while True:
            line = self.line()
            assert line is not None, "stdout closed before the response"
            frame = json.loads(line)
            if frame.get("id") == request_id and "method" not in frame:
                return frame

    def handshake(self) -> dict:
        answer = self.response(self.request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw-test", "version": "0"}}))
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return answer["result"]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.stderr.close()


@pytest.fixture
def raw_mcp(tmp_path):
    servers: list[RawMcp] = []

    def start(**env: str) -> RawMcp:
        server = RawMcp(tmp_path, **env)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


# ---------------------------------------------------------------------------
# tests/mcp/stdio_server.py
# ---------------------------------------------------------------------------


def test_the_stdio_server_lists_its_tools_with_schemas_and_annotations(tmp_path):
    pid_file = tmp_path / "pids"

    async def body():
        async with Client(stdio_params(MCP_PID_FILE=str(pid_file)), mode="legacy") as client:
            assert client.server_capabilities.tools.list_changed is True
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            pids = [int(line) for line in pid_file.read_text().split()]
            assert len(pids) == 1 and alive(pids[0])
            return tools, pids

    tools, pids = bounded(body)
    assert set(tools) == STDIO_TOOLS
    assert all(tool.description and tool.input_schema["type"] == "object" for tool in tools.values())
    assert tools["echo"].input_schema["properties"]["text"]["type"] == "string"
    assert tools["echo"].input_schema["required"] == ["text"]
    assert {k: v["type"] for k, v in tools["add"].input_schema["properties"].items()} == {"a": "integer", "b": "integer"}
    assert tools["hang"].input_schema["properties"]["seconds"]["type"] == "number"
    assert tools["echo"].annotations.read_only_hint is True
    assert tools["add"].annotations is None
    assert (tools["destroy"].annotations.destructive_hint, tools["destroy"].annotations.read_only_hint) == (True, False)
    assert wait_gone(pids) == [], "the server outlived its client closing stdin"


def test_the_stdio_server_answers_each_tool(tmp_path):
    call_log = tmp_path / "calls.jsonl"

    async def body():
        env = {"MCP_CALL_LOG": str(call_log), "DEEPSEEK_API_KEY": "sk-visible-to-the-server"}
        async with Client(stdio_params(**env), mode="legacy") as client:
            return {
                "echo": await client.call_tool("echo", {"text": "hello mcp"}),
                "add": await client.call_tool("add", {"a": 2, "b": 40}),
                "add_bad": await client.call_tool("add", {"a": "two", "b": 3}),
                "image": await client.call_tool("image", {}),
                "fail": await client.call_tool("fail", {"message": "it broke"}),
                "env": await client.call_tool("env", {"name": "DEEPSEEK_API_KEY"}),
                "env_unset": await client.call_tool("env", {"name": "DSH_SURELY_UNSET_VARIABLE"}),
                "destroy": await client.call_tool("destroy", {"path": "/etc/passwd"}),
                "flood": await client.call_tool("flood", {"megabytes": 1}),
            }

    results = bounded(body)
    assert (text(results["echo"]), results["echo"].is_error) == ("hello mcp", False)
    assert (text(results["add"]), results["add"].is_error) == ("42", False)
    assert results["add_bad"].is_error is True
    [image] = results["image"].content
    assert (image.type, image.mime_type, image.data) == ("image", "image/png", PNG)
    assert base64.b64decode(image.data)[:8] == b"\x89PNG\r\n\x1a\n"
    assert (text(results["fail"]), results["fail"].is_error) == ("it broke", True)
    # The server hides nothing itself: what dsh passes is what the tool sees.
    assert text(results["env"]) == "sk-visible-to-the-server"
    assert text(results["env_unset"]) == "<unset>"
    assert text(results["destroy"]) == "destroyed /etc/passwd"
    assert text(results["flood"]) == "x" * (1024 * 1024)
    # The call log holds every request as it arrived, before validation.
    calls = [json.loads(line) for line in call_log.read_text().splitlines()]
    assert calls[0]["method"] == "initialize"
    tool_calls = [(c["tool"], c["arguments"]) for c in calls if c["method"] == "tools/call"]
    assert tool_calls[:3] == [("echo", {"text": "hello mcp"}), ("add", {"a": 2, "b": 40}), ("add", {"a": "two", "b": 3})]
    assert len(tool_calls) == 9


def test_the_stdio_server_grows_a_tool_and_says_so():
    async def body():
        changed = anyio.Event()

        async def on_message(message):
            if getattr(message, "method", None) == "notifications/tools/list_changed":
                changed.set()

        async with Client(stdio_params(), mode="legacy", message_handler=on_message) as client:
            before = {tool.name for tool in (await client.list_tools()).tools}
            grown = await client.call_tool("grow", {})
            await changed.wait()
            after = {tool.name: tool for tool in (await client.list_tools()).tools}
            late = await client.call_tool("late", {"x": "q"})
            return before, grown, after, late

    before, grown, after, late = bounded(body)
    assert "late" not in before
    assert not grown.is_error
    assert set(after) == STDIO_TOOLS | {"late"}
    assert after["late"].input_schema["properties"]["x"]["type"] == "string"
    assert text(late) == "late q"


def test_a_hanging_call_does_not_hold_up_another():
    async def body():
        order: list[str] = []
        async with Client(stdio_params(), mode="legacy") as client:
            async def hang():
                result = await client.call_tool("hang", {"seconds": 2})
                order.append(text(result))

            async with anyio.create_task_group() as group:
                group.start_soon(hang)
                result = await client.call_tool("echo", {"text": "meanwhile"})
                order.append(text(result))
        return order

    assert bounded(body) == ["meanwhile", "slept 2"]


def test_crash_exits_mid_call_without_an_answer(raw_mcp, tmp_path):
    server = raw_mcp(MCP_PID_FILE=str(tmp_path / "pids"))
    server.handshake()
    server.request("tools/call", {"name": "crash", "arguments": {}})
    assert server.line() is None, "the server answered instead of exiting"
    assert server.proc.wait(timeout=FRAME_TIMEOUT) == 3


def test_garbage_puts_a_non_json_line_on_stdout_and_the_server_stays(raw_mcp):
    server = raw_mcp()
    server.handshake()
    server.request("tools/call", {"name": "garbage", "arguments": {}})
    line = server.line()
    assert line is not None
    with pytest.raises(ValueError):
        json.loads(line)
    time.sleep(0.2)  # it hangs rather than exits
    assert server.proc.poll() is None


def test_flood_answers_one_message_over_the_cap(raw_mcp):
    server = raw_mcp()
    server.handshake()
    request_id = server.request("tools/call", {"name": "flood", "arguments": {"megabytes": 2}})
    line = server.line()
    assert len(line) > 2 * 1024 * 1024
    frame = json.loads(line)
    assert frame["id"] == request_id and frame["result"]["content"][0]["text"] == "x" * (2 * 1024 * 1024)


def test_the_pid_file_gets_one_line_per_start(tmp_path, raw_mcp):
    pid_file = tmp_path / "pids"
    first = raw_mcp(MCP_PID_FILE=str(pid_file))
    first.handshake()
    second = raw_mcp(MCP_PID_FILE=str(pid_file))
    second.handshake()
    assert sorted(int(p) for p in pid_file.read_text().split()) == sorted([first.proc.pid, second.proc.pid])


# ---------------------------------------------------------------------------
# tests/mcp/http_server.py
# ---------------------------------------------------------------------------


@pytest.fixture
def http_server(tmp_path):
    """Start http_server.py on a free port: yields its URL."""
    with http_mcp_server(tmp_path / "http-stderr.txt") as url:
        yield url


def test_the_http_server_lists_and_answers_and_sees_the_headers(http_server):
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    assert http_server.startswith("http://127.0.0.1:") and http_server.endswith("/mcp")

    async def body():
        async with httpx2.AsyncClient(headers={"X-Test-Token": "tok-42"}) as http:
            async with Client(streamable_http_client(http_server, http_client=http), mode="legacy") as client:
                tools = {tool.name: tool for tool in (await client.list_tools()).tools}
                return (tools, await client.call_tool("add", {"a": 1, "b": 2}),
                        await client.call_tool("echo", {"text": "over http"}), await client.call_tool("whoami", {}))

    tools, added, echoed, who = bounded(body)
    assert set(tools) == {"echo", "add", "hang", "whoami"}
    assert tools["add"].input_schema["required"] == ["a", "b"]
    assert text(added) == "3" and text(echoed) == "over http"
    assert text(who) == "tok-42"


def test_the_http_server_without_the_header_says_none(http_server):
    async def body():
        async with Client(http_server, mode="legacy") as client:
            return await client.call_tool("whoami", {})

    assert text(bounded(body)) == "<none>"


# ---------------------------------------------------------------------------
# @modelcontextprotocol/server-everything (npm)
# ---------------------------------------------------------------------------


def test_server_everything_runs_over_stdio_and_echoes():
    if not EVERYTHING.is_file():
        pytest.fail(f"{EVERYTHING} is missing: run `npm ci` in {MCP_DIR}")

    async def body():
        params = StdioServerParameters(command="node", args=[str(EVERYTHING), "stdio"], env=dict(os.environ))
        async with Client(params, mode="legacy") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            return tools, await client.call_tool("echo", {"message": "hi there"})

    tools, echoed = bounded(body)
    assert {"echo", "get-sum", "get-tiny-image"} <= set(tools)
    assert tools["echo"].input_schema["properties"]["message"]["type"] == "string"
    assert text(echoed) == "Echo: hi there"
