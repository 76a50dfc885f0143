"""An MCP server over stdio, written with the official Python SDK (`mcp`, 2.x:
`MCPServer`, formerly FastMCP), for dsh's MCP client tests
(tests/interop/test_mcp.py; the server alone: tests/interop/test_mcp_servers.py).

Run: `python stdio_server.py` (newline-delimited JSON-RPC on stdin/stdout).

Environment:
  MCP_PID_FILE  when set, the server appends its PID (one line) to that file on
                start, so a test can count starts and check that no server
                process outlives the runtime.
  MCP_CALL_LOG  when set, every request the server receives is appended to
                that file as one JSON line, `{"method", "tool"?, "arguments"?}`,
                before the SDK validates it: a test can tell that a call never
                reached the server.

Tools, each with a docstring and typed parameters (so each has an input schema):
  echo(text)          the text; annotated readOnlyHint=true
  add(a, b)           a + b (integers; no annotations)
  image()             an 8x8 PNG image block
  fail(message)       a tool error result (isError true) holding the message
  crash()             the process exits at once (status 3) mid-call
  hang(seconds)       sleeps (async) that long, then answers "slept <seconds>"
  flood(megabytes)    answers one text of that many MiB: a single JSON-RPC
                      message over a client's size cap
  garbage()           writes a line that is not JSON to the real stdout, then hangs
  env(name)           the server's environment variable, or "<unset>"
  grow()              registers the tool late(x) and sends
                      notifications/tools/list_changed
  destroy(path)       annotated destructiveHint=true, readOnlyHint=false;
                      deletes nothing, answers "destroyed <path>"
"""

from __future__ import annotations

import base64
import json
import os
import sys

import anyio
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.stdio import stdio_server
from mcp.types import CallToolResult, TextContent, ToolAnnotations

# An 8x8 RGB PNG (the one tests/interop/test_differential.py uses).
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC"
)

server = MCPServer("dsh-test-stdio", version="1.0.0", log_level="WARNING")


async def log_requests(ctx, call_next):
    """Middleware: append each inbound request to $MCP_CALL_LOG (raw, unvalidated)."""
    path = os.environ.get("MCP_CALL_LOG")
    if path and ctx.request_id is not None:
        params = ctx.params or {}
        entry = {"method": ctx.method}
        if ctx.method == "tools/call":
            entry |= {"tool": params.get("name"), "arguments": params.get("arguments")}
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(entry) + "\n")
    return await call_next(ctx)


server.middleware.append(log_requests)


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Echo the text back unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def image() -> Image:
    """Return a tiny 8x8 PNG image."""
    return Image(data=PNG, format="png")


@server.tool()
def fail(message: str) -> CallToolResult:
    """Fail with the given message (a tool error result)."""
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


@server.tool()
def crash() -> str:
    """Exit the server process immediately, in the middle of the call."""
    sys.stdout.flush()
    os._exit(3)


@server.tool()
async def hang(seconds: float) -> str:
    """Sleep for the given number of seconds, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds:g}"


@server.tool()
def flood(megabytes: int) -> str:
    """Answer one text of that many MiB (a single oversized message)."""
    return "x" * (megabytes * 1024 * 1024)


# The SDK's stdio transport points fd 1 at stderr while it runs (so stray
# prints cannot corrupt the protocol) and writes the wire through a private
# duplicate; garbage() writes through this duplicate of the real stdout, taken
# before the transport starts.
RAW_STDOUT: int | None = None


@server.tool()
async def garbage() -> str:
    """Write a line that is not JSON to stdout, then hang."""
    os.write(RAW_STDOUT if RAW_STDOUT is not None else 1, b"this is not JSON-RPC, just garbage on stdout\n")
    await anyio.sleep(3600)
    return "unreachable"


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server, or <unset>."""
    return os.environ.get(name, "<unset>")


def late(x: str) -> str:
    """A tool that exists only after grow() was called."""
    return f"late {x}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Register the tool `late` and tell the client the tool list changed."""
    if not any(tool.name == "late" for tool in await server.list_tools()):
        server.add_tool(late)
    await ctx.session.send_tool_list_changed()
    return "grew late"


@server.tool(annotations=ToolAnnotations(destructive_hint=True, read_only_hint=False))
def destroy(path: str) -> str:
    """Pretend to destroy the file at path (deletes nothing)."""
    return f"destroyed {path}"


def record_pid() -> None:
    path = os.environ.get("MCP_PID_FILE")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)


async def serve() -> None:
    """`server.run("stdio")`, but advertising `tools.listChanged: true` (the
    server sends that notification from grow()); `MCPServer.run` offers no
    option for it, so this goes through its low-level server."""
    lowlevel = server._lowlevel_server  # noqa: SLF001 - no public knob for the capability
    options = lowlevel.create_initialization_options(NotificationOptions(tools_changed=True))
    async with stdio_server() as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, options)


if __name__ == "__main__":
    RAW_STDOUT = os.dup(1)
    record_pid()
    anyio.run(serve)
