"""An MCP server over streamable HTTP, written with the official Python SDK
(`mcp`, 2.x: `MCPServer`), for dsh's MCP client tests
(tests/interop/test_mcp.py; the server alone: tests/interop/test_mcp_servers.py).

Run: `python http_server.py [PORT]` — listens on 127.0.0.1:PORT (default 0: a
free port), endpoint path /mcp. Once it listens it prints one JSON line on
stdout, `{"port": N, "url": "http://127.0.0.1:N/mcp"}`, and flushes, so a test
starts it as a subprocess and reads that line to wait for it.

Environment:
  MCP_PID_FILE  when set, the server appends its PID (one line) to that file.

Tools (typed parameters, docstrings):
  echo(text)        the text; annotated readOnlyHint=true
  add(a, b)         a + b (integers)
  hang(seconds)     sleeps (async) that long, then answers "slept <seconds>"
  whoami()          the value of the HTTP request header X-Test-Token the call
                    arrived with, or "<none>"
"""

from __future__ import annotations

import json
import os
import socket
import sys

import anyio
import uvicorn
from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("dsh-test-http", version="1.0.0", log_level="WARNING")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Echo the text back unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def hang(seconds: float) -> str:
    """Sleep for the given number of seconds, then answer."""
    await anyio.sleep(seconds)
    return f"slept {seconds:g}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def whoami(ctx: Context) -> str:
    """The X-Test-Token header of the HTTP request that carried this call."""
    headers = ctx.headers or {}
    return headers.get("x-test-token", "<none>")


def record_pid() -> None:
    path = os.environ.get("MCP_PID_FILE")
    if path:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, f"{os.getpid()}\n".encode())
        finally:
            os.close(fd)


def main() -> None:
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(64)
    port = sock.getsockname()[1]
    app = server.streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uvicorn_server = uvicorn.Server(config)
    record_pid()

    async def serve() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(uvicorn_server.serve, [sock])
            while not uvicorn_server.started:
                await anyio.sleep(0.01)
            print(json.dumps({"port": port, "url": f"http://127.0.0.1:{port}/mcp"}), flush=True)

    anyio.run(serve)


if __name__ == "__main__":
    main()
