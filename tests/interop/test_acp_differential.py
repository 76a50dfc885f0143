"""Issue 30: `dsh acp` against the official `--profile acp`, frame by frame.

Each test runs the same raw JSON-RPC steps against both runtimes (each with
its own fake model, DSH_HOME and workspace; the two run side by side) and
compares what the official profile answers on its own surface:

* the `initialize`, `session/new`, `session/resume` and
  `session/set_config_option` results, with dsh's documented additions
  (docs/acp.md) split off and checked on their own: `loadSession`, image and
  embedded-context prompts, `modes`;
* every error the official profile answers (its `code` and `message`; the
  official's zod `data` is not compared);
* each prompt's `stopReason` and its `session/update`s, normalised for dsh's
  documented extras: consecutive `agent_message_chunk`s (and
  `agent_thought_chunk`s) are joined, `plan`, `session_info_update` and
  `current_mode_update` are set aside, a tool call is compared by its
  `toolCallId`, `rawInput`, status sequence and final text (dsh's `kind`,
  `title`, `locations`, progress frames and `diff`s are checked against
  docs/acp.md instead), `usage_update` by its place and `size`;
* what the fake model was asked (model, effort, the prompt's text).

A `session/request_permission` (dsh only: docs/acp.md, Permission requests)
is allowed once and recorded; the `pending` status its tool call waits in is
not part of the compared status sequence. Every test but two (which probe
`initialize` itself) starts with `initialize`, as editors do.

Masked: session ids (a bare UUID v4 in both; labelled in order of
appearance), messageIds (labelled in order of appearance, so a step's thought
and text must share one as in the official profile), `usage_update.used` (it
counts each runtime's own prose), dsh's `usage_update.cost`, the temp base
directory, and `agentInfo.version`.

Where the official profile and dsh differ on purpose (docs/acp.md: the
official `session/list` is always empty, it refuses image and embedded
prompts and has no `session/load` / `session/set_mode`), each side is
asserted separately.

Both runtimes are started as `<binary> --profile acp` (dsh takes the official
spelling). With DSH_BIN pointing at the official runtime itself the tests
compare the oracle with itself: the dsh-only expectations then expect the
official behaviour (a self-check of the tests).

The official behaviours the assertions name were observed black-box (raw
frames against the fake model); each test asserts them on the official side
too, so a change in the oracle shows as such.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Callable

import pytest

from interop_support import (EXIT_TIMEOUT, FRAME_TIMEOUT, REPO_ROOT, FakeModel, RawClient, clean_env, http_mcp_server,
                             is_response)
from test_differential import KEY, official_bin  # noqa: F401 - fixture

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAgAAAAICAIAAABLbSncAAAAEklEQVR4nGP4z8CAFWEXHbQSACj/P8Fu7N9hAAAAAElFTkSuQmCC"
MCP_DIR = REPO_ROOT / "tests" / "mcp"
TURN_TIMEOUT = 60.0  # one prompt (upper bound)


def model_value(model: str) -> str:
    """A `model` config option value: the JSON array [provider, model] as a string."""
    return json.dumps(["deepseek-official", model], separators=(",", ":"))


def text(value: str) -> list[dict]:
    return [{"type": "text", "text": value}]


# dsh's documented additions to the official answers (docs/acp.md, Methods).
INITIALIZE_EXTRAS = {
    ("agentCapabilities", "loadSession"): True,
    ("agentCapabilities", "promptCapabilities", "image"): True,
    ("agentCapabilities", "promptCapabilities", "embeddedContext"): True,
}
MODE_IDS = ["read-only", "workspace-write", "danger-full-access"]
# Tool kinds by tool (docs/acp.md, Session updates).
KINDS = {"bash": "execute", "read": "read", "read_image": "read", "write": "edit", "edit": "edit", "glob": "search",
         "grep": "search", "web_search": "search", "web_fetch": "fetch", "todo_write": "think",
         "exit_plan_mode": "think"}
# Updates the official profile never sends and dsh documents.
SET_ASIDE = {"plan", "session_info_update", "current_mode_update"}
FINAL = {"completed", "failed"}
_MISSING = object()


# ---------------------------------------------------------------------------
# One runtime's `--profile acp` process
# ---------------------------------------------------------------------------


class Masker:
    """Labels random ids in order of appearance and hides the temp base."""

    def __init__(self, base: Path) -> None:
        self.base = str(base)
        self.sessions: dict[str, str] = {}
        self.messages: dict[str, str] = {}

    def session(self, session_id: str) -> str:
        assert isinstance(session_id, str) and UUID4.match(session_id), f"not a bare UUID v4: {session_id!r}"
        return self.sessions.setdefault(session_id, f"<session-{len(self.sessions) + 1}>")

    def message(self, message_id: Any) -> str:
        if message_id is None:
            return "<absent>"
        assert isinstance(message_id, str) and message_id, f"bad messageId {message_id!r}"
        return self.messages.setdefault(message_id, f"<message-{len(self.messages) + 1}>")

    def __call__(self, value: Any) -> Any:
        data = json.dumps(value).replace(self.base, "<base>")
        for raw, label in self.sessions.items():
            data = data.replace(raw, label)
        return json.loads(data)


class Acp:
    """`<binary> --profile acp` in `base/ws` against its own fake model, raw frames."""

    def __init__(self, binary: Path, base: Path, server: FakeModel, home: Path) -> None:
        self.base = base
        self.workspace = base / "ws"
        self.workspace.mkdir(parents=True, exist_ok=True)
        self.home = home
        self.dsh_home = base / "dsh_home"
        self.server = server
        self.mask = Masker(base)
        self.extras: list[Any] = []  # what normalisation set aside (checked per side)
        self.tools: dict[str, dict] = {}  # toolCallId -> kind, title, locations, diffs
        self.permissions: dict[Any, str] = {}  # answered session/request_permission ids -> toolCallId
        self.next_id = 0
        self.binary = binary
        self.client: RawClient | None = None
        self.start()

    def start(self) -> None:
        """(Re)start the process on the same DSH_HOME and workspace."""
        env = clean_env(self.dsh_home, self.home, DEEPSEEK_BASE_URL=self.server.base_url, DEEPSEEK_API_KEY=KEY)
        self.client = RawClient(self.binary, None, self.workspace, self.home, env=env,
                                args=["--profile", "acp"])

    def initialize(self) -> None:
        """The client's first request, as editors send it."""
        answer = self.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}})
        assert answer.get("result", {}).get("protocolVersion") == 1, answer

    @property
    def ws(self) -> str:
        return str(self.workspace)

    # -- frames ---------------------------------------------------------------

    def send(self, method: str, params: Any = _MISSING) -> int:
        self.next_id += 1
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not _MISSING:
            frame["params"] = params
        self.client.send(frame)
        return self.next_id

    def notify(self, method: str, params: Any) -> None:
        self.client.send({"jsonrpc": "2.0", "method": method, "params": params})

    def response(self, request_id: Any, timeout: float = FRAME_TIMEOUT) -> tuple[int, dict]:
        """The response to `request_id`; a `session/request_permission` that
        arrives first (dsh only: docs/acp.md, Permission requests) is allowed
        once and recorded in `extras`."""
        deadline = time.monotonic() + timeout

        def wanted(frame: dict) -> bool:
            if frame.get("method") == "session/request_permission":
                return frame.get("id") not in self.permissions
            return is_response(frame) and frame.get("id") == request_id

        while True:
            index, frame = self.client.wait_for(wanted, timeout=max(deadline - time.monotonic(), 0.01),
                                                what=f"response to id {request_id!r}")
            if "method" not in frame:
                return index, frame
            params = frame["params"]
            option = next(o["optionId"] for o in params["options"] if o["kind"] == "allow_once")
            self.permissions[frame["id"]] = params["toolCall"]["toolCallId"]
            self.extras.append({"request_permission": params["toolCall"]["toolCallId"]})
            self.client.send({"jsonrpc": "2.0", "id": frame["id"],
                              "result": {"outcome": {"outcome": "selected", "optionId": option}}})

    def call(self, method: str, params: Any = _MISSING, timeout: float = FRAME_TIMEOUT) -> dict:
        """Send a request; its outcome: {"result": …} or {"error": {code, message}}, masked."""
        return self.outcome(self.response(self.send(method, params), timeout)[1])

    def outcome(self, frame: dict) -> dict:
        assert frame.get("jsonrpc") == "2.0", frame
        if "error" in frame:
            error = frame["error"]
            assert isinstance(error.get("code"), int) and isinstance(error.get("message"), str), frame
            return {"error": self.mask({"code": error["code"], "message": error["message"]})}
        return {"result": self.mask(frame["result"])}

    def new_session(self, **params: Any) -> tuple[str, dict]:
        """session/new in the workspace: (raw session id, masked result)."""
        params = {"cwd": self.ws, "mcpServers": [], **params}
        frame = self.response(self.send("session/new", params))[1]
        assert "result" in frame, f"session/new failed: {frame}"
        session_id = frame["result"]["sessionId"]
        self.mask.session(session_id)
        return session_id, self.outcome(frame)["result"]

    def prompt(self, session_id: str, prompt: Any, timeout: float = TURN_TIMEOUT) -> dict:
        """One session/prompt: its outcome and its normalised updates."""
        start = len(self.client.frames)
        request_id = self.send("session/prompt", {"sessionId": session_id, "prompt": prompt})
        return self.finish(session_id, request_id, start, timeout)

    def finish(self, session_id: str, request_id: int, start: int, timeout: float = TURN_TIMEOUT) -> dict:
        index, frame = self.response(request_id, timeout)
        updates = self.updates(session_id, start, index)
        return {"outcome": self.outcome(frame), "updates": self.normalise(updates)}

    def updates(self, session_id: str, start: int, end: int | None = None) -> list[dict]:
        out = []
        for frame in self.client.frames[start:end]:
            assert "__unparsable__" not in frame, frame
            if frame.get("method") == "session/update" and frame["params"]["sessionId"] == session_id:
                assert "id" not in frame, frame
                out.append(frame["params"]["update"])
        return out

    def normalise(self, updates: list[dict]) -> list[dict]:
        """The updates as comparable records (see the module docstring)."""
        records: list[dict] = []
        calls: dict[str, dict] = {}
        for update in updates:
            kind = update.get("sessionUpdate")
            if kind in ("agent_message_chunk", "agent_thought_chunk"):
                content = update["content"]
                assert content.get("type") == "text", update
                message = self.mask.message(update.get("messageId"))
                last = records[-1] if records else None
                if last and last["update"] == kind and last["messageId"] == message:
                    last["text"] += content["text"]
                else:
                    records.append({"update": kind, "messageId": message, "text": content["text"]})
            elif kind == "usage_update":
                assert isinstance(update.get("used"), int) and update["used"] >= 0, update
                if "cost" in update:
                    self.extras.append({"usage_update.cost": update["cost"]})
                rest = {k: v for k, v in update.items() if k not in ("sessionUpdate", "used", "cost")}
                records.append({"update": kind, **rest})
            elif kind == "tool_call":
                call_id = update["toolCallId"]
                assert call_id not in calls, f"tool call {call_id} announced twice"
                calls[call_id] = {"update": "tool", "toolCallId": call_id, "rawInput": update.get("rawInput"),
                                  "statuses": [], "text": None}
                self.tools[call_id] = {"kind": update.get("kind"), "title": update.get("title"),
                                       "locations": update.get("locations"), "diffs": []}
                self._status(calls[call_id], update)
            elif kind == "tool_call_update":
                call = calls.get(update["toolCallId"])
                assert call is not None, f"update of an unannounced tool call: {update}"
                if "rawInput" in update:
                    call["rawInput"] = update["rawInput"]
                for item in update.get("content") or []:
                    if item.get("type") == "diff":
                        self.tools[call["toolCallId"]]["diffs"].append(self.mask(item))
                self._status(call, update)
                if update.get("status") in FINAL:
                    if call["toolCallId"] in self.permissions.values():
                        # dsh asked the client first (a documented extra): the call waited as `pending`.
                        kept = [s for s in call["statuses"] if s != "pending"]
                        call["statuses"] = [s for i, s in enumerate(kept) if i == 0 or kept[i - 1] != s]
                    call["text"] = self.mask([item["content"]["text"] for item in update.get("content") or []
                                              if item.get("type") == "content"
                                              and item["content"].get("type") == "text"])
                    records.append(call)
            elif kind in SET_ASIDE:
                self.extras.append(self.mask(update))
            else:
                records.append(self.mask(update))
        unfinished = [c["toolCallId"] for c in calls.values() if c not in records]
        assert not unfinished, f"tool calls without a final status: {unfinished}"
        return records

    @staticmethod
    def _status(call: dict, update: dict) -> None:
        status = update.get("status")
        if status is not None and (not call["statuses"] or call["statuses"][-1] != status):
            call["statuses"].append(status)

    # -- the fake model and the process -----------------------------------------

    def requests(self) -> list[dict]:
        """The fake model's recorded requests (complete lines only: the record
        may be mid-write while a request is in flight)."""
        if not self.server.record.exists():
            return []
        data = self.server.record.read_text(encoding="utf-8")
        return [json.loads(line) for line in data[:data.rfind("\n") + 1].splitlines() if line]

    def wait_requests(self, count: int, timeout: float = FRAME_TIMEOUT) -> None:
        """Wait (bounded) until the fake model has received `count` requests."""
        deadline = time.monotonic() + timeout
        while len(self.requests()) < count:
            assert time.monotonic() < deadline, f"the fake model saw {len(self.requests())} of {count} requests"
            time.sleep(0.02)  # polling interval only

    def asked(self) -> list[dict]:
        """What each model request asked for: model, effort, thinking."""
        return [{"model": r["body"].get("model"), "output_config": r["body"].get("output_config"),
                 "thinking": r["body"].get("thinking")} for r in self.requests()]

    def eof(self, timeout: float = EXIT_TIMEOUT) -> int:
        """Close stdin; the exit code (bounded)."""
        self.client.close_stdin()
        return self.client.wait_exit(timeout)

    def kill(self) -> None:
        if self.client is not None:
            self.client.kill()


def differential(official: Path, dsh: Path, base_dir: Path, homes: dict[str, Path], replies: list[dict],
                 drive: Callable[[Acp], Any], initialize: bool = True) -> tuple[Any, Any, dict[str, Acp]]:
    """Run `drive` against both runtimes side by side (after `initialize`
    unless told not to): (official's, dsh's, the Acps)."""
    runs: dict[str, Acp] = {}
    servers: list[FakeModel] = []

    def one(who: str, binary: Path) -> Any:
        server = FakeModel(base_dir / who / "fake", replies)
        servers.append(server)
        acp = Acp(binary, base_dir / who, server, homes[who])
        runs[who] = acp
        if initialize:
            acp.initialize()
        return drive(acp)

    try:
        with ThreadPoolExecutor(2) as pool:
            futures = {who: pool.submit(one, who, binary) for who, binary in (("official", official), ("dsh", dsh))}
            results = {who: future.result(timeout=5 * TURN_TIMEOUT) for who, future in futures.items()}
    finally:
        for acp in runs.values():
            acp.kill()
        for server in servers:
            server.close()
    assert runs["official"].extras == [], "the official profile sent what it is documented not to send"
    return results["official"], results["dsh"], runs


@pytest.fixture(scope="module")
def homes(tmp_path_factory) -> dict[str, Path]:
    """One HOME per side for the whole module: the official runtime unpacks
    ~85 MB into its HOME on first start (sessions stay in each test's DSH_HOME)."""
    return {who: tmp_path_factory.mktemp(f"acp-home-{who}") for who in ("official", "dsh")}


@pytest.fixture
def dsh_is_official(official_bin, dsh_bin) -> bool:
    """DSH_BIN names the official runtime itself: dsh-only expectations then
    expect the official behaviour (the tests' self-check)."""
    return os.path.samefile(official_bin, dsh_bin)


def split(result: dict, paths) -> dict:
    """Remove `paths` (tuples of keys) from `result`; what they held (_MISSING when absent)."""
    taken = {}
    for path in paths:
        node = result
        for key in path[:-1]:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        taken[path] = node.pop(path[-1], _MISSING) if isinstance(node, dict) else _MISSING
    return taken


def check_modes(modes: Any, dsh_is_official: bool) -> None:
    """dsh's `modes` (docs/acp.md, Modes); the official answers none."""
    if dsh_is_official:
        assert modes is _MISSING
        return
    assert isinstance(modes, dict), modes
    assert modes.get("currentModeId") == "workspace-write", modes
    assert [m.get("id") for m in modes.get("availableModes", [])] == MODE_IDS, modes
    assert all(isinstance(m.get("name"), str) and m["name"] for m in modes["availableModes"]), modes


def check_kinds(acp: Acp, names: dict[str, str], dsh_is_official: bool) -> None:
    """dsh's tool kinds and titles (docs/acp.md); the official's are `other` and the tool's name."""
    for call_id, tool in names.items():
        seen = acp.tools[call_id]
        if dsh_is_official:
            assert (seen["kind"], seen["title"]) == ("other", tool), seen
        else:
            # An absent `kind` is ACP's default, `other`.
            assert (seen["kind"] or "other") == KINDS.get(tool, "other"), (call_id, tool, seen)
            assert isinstance(seen["title"], str) and seen["title"], seen


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------------------
# initialize, framing, methods
# ---------------------------------------------------------------------------


def test_initialize_and_unknown_methods_answer_like_the_official_profile(
        official_bin, dsh_bin, base_dir, homes, dsh_is_official):
    """initialize (protocol 1, 2, missing, a string, no params), an unknown
    method, `authenticate`, a parse error, a string id and an unknown
    notification: the same answers, dsh adding exactly its documented
    capabilities."""

    def drive(acp: Acp) -> dict:
        out = {"v1": acp.call("initialize", {"protocolVersion": 1, "clientCapabilities": {}}),
               "v2": acp.call("initialize", {"protocolVersion": 2}),
               "missing": acp.call("initialize", {}),
               "string": acp.call("initialize", {"protocolVersion": "x"}),
               "no params": acp.call("initialize"),
               "unknown method": acp.call("foo/bar", {}),
               "authenticate": acp.call("authenticate", {"methodId": "x"})}
        start = len(acp.client.frames)
        acp.client.send_raw(b"{not json\n")
        acp.client.send({"jsonrpc": "2.0", "method": "foo/notify", "params": {}})
        acp.client.send({"jsonrpc": "2.0", "id": "str-id", "method": "authenticate", "params": {"methodId": "y"}})
        index, answer = acp.client.response_to("str-id", start=start)
        out["after garbage"] = [acp.mask({k: ({"code": v["code"], "message": v["message"]} if k == "error" else v)
                                          for k, v in f.items()}) for f in acp.client.frames[start:index + 1]]
        out["set_mode"] = acp.call("session/set_mode", {"sessionId": "x", "modeId": "read-only"})
        out["load"] = acp.call("session/load", {"sessionId": "x", "cwd": acp.ws, "mcpServers": []})
        out["exit"] = acp.eof()
        return out

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, [], drive, initialize=False)
    # Documented differences first: the official has neither session/set_mode nor session/load.
    for method in ("set_mode", "load"):
        assert official[method] == {"error": {"code": -32601, "message": f'"Method not found": session/{method}'}}
        if dsh_is_official:
            assert dsh[method] == official[method]
        else:
            assert dsh[method].get("error", {}).get("code") != -32601, (method, dsh[method])
        del official[method], dsh[method]
    for key in ("v1", "v2"):
        for side in (official, dsh):
            info = side[key]["result"]["agentInfo"]
            assert isinstance(info.pop("version"), str)
        extras = split(dsh[key]["result"], INITIALIZE_EXTRAS)
        base = split(official[key]["result"], INITIALIZE_EXTRAS)
        assert base == {p: (False if p[-1] != "loadSession" else _MISSING) for p in INITIALIZE_EXTRAS}
        assert extras == (base if dsh_is_official else INITIALIZE_EXTRAS)
    assert official["v1"]["result"]["protocolVersion"] == official["v2"]["result"]["protocolVersion"] == 1
    assert official["after garbage"] == [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
        {"jsonrpc": "2.0", "id": "str-id", "result": {}}]
    assert official["exit"] == 0
    assert dsh == official


def test_sessions_work_without_initialize_like_the_official_profile(official_bin, dsh_bin, base_dir, homes):
    """The official profile does not require `initialize`: session/new and a
    prompt work first, and a late `initialize` still answers."""

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()
        turn = acp.prompt(session_id, text("hi"))
        late = acp.call("initialize", {"protocolVersion": 1})
        return {"turn": turn, "late initialize": "result" in late}

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, [{"text": "Hello there."}], drive,
                                    initialize=False)
    assert official["turn"]["outcome"] == {"result": {"stopReason": "end_turn"}}
    assert official["late initialize"] is True
    assert dsh == official


# ---------------------------------------------------------------------------
# session/new and MCP servers
# ---------------------------------------------------------------------------


def test_session_new_answers_like_the_official_profile(official_bin, dsh_bin, base_dir, homes, dsh_is_official):
    """session/new: the result (dsh adds `modes`), a bare UUID v4 session id,
    and the errors for a missing, relative cwd, missing mcpServers, an SSE
    server, a stdio server that fails and an unreachable HTTP server; a
    non-existent absolute cwd is accepted and its first prompt fails."""
    port = free_port()

    def drive(acp: Acp) -> dict:
        session_id, result = acp.new_session()
        modes = result.pop("modes", _MISSING)
        second_id, second = acp.new_session()
        second.pop("modes", None)
        out = {"result": result, "second": second, "modes": modes, "distinct": session_id != second_id}
        for name, params in {
            "no params": _MISSING,
            "no cwd": {"mcpServers": []},
            "relative cwd": {"cwd": "rel/dir", "mcpServers": []},
            "no mcpServers": {"cwd": acp.ws},
            "sse": {"cwd": acp.ws, "mcpServers": [
                {"type": "sse", "name": "s", "url": f"http://127.0.0.1:{port}/sse", "headers": []}]},
            "stdio fails": {"cwd": acp.ws, "mcpServers": [{"name": "st", "command": "/bin/false", "args": [],
                                                           "env": []}]},
            "stdio missing": {"cwd": acp.ws, "mcpServers": [{"name": "st2", "command": "/nonexistent/cmd",
                                                             "args": [], "env": []}]},
            "http unreachable": {"cwd": acp.ws, "mcpServers": [
                {"type": "http", "name": "h", "url": f"http://127.0.0.1:{port}/mcp", "headers": []}]},
        }.items():
            outcome = acp.call("session/new", params)
            out[name] = outcome if "error" in outcome else "accepted"
        gone = acp.response(acp.send("session/new", {"cwd": str(acp.base / "no" / "such" / "dir"),
                                                     "mcpServers": []}))[1]
        out["missing cwd"] = "accepted" if "result" in gone else acp.outcome(gone)
        if "result" in gone:
            acp.mask.session(gone["result"]["sessionId"])
            out["missing cwd prompt"] = acp.prompt(gone["result"]["sessionId"], text("hi"))
        out["requests"] = len(acp.requests())
        return out

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, [{"text": "never"}], drive)
    check_modes(dsh.pop("modes"), dsh_is_official)
    assert official.pop("modes") is _MISSING
    assert official["distinct"]
    assert official["result"]["configOptions"] == official["second"]["configOptions"]
    assert official["relative cwd"] == {"error": {"code": -32602,
                                                  "message": "Invalid params: cwd must be an absolute path: rel/dir"}}
    assert official["sse"]["error"]["message"] == "Invalid params: mcpServers[0] transport sse is not supported"
    assert official["http unreachable"] == {"error": {"code": -32603, "message": "Internal error"}}
    assert official["missing cwd"] == "accepted"
    assert official["missing cwd prompt"]["outcome"]["error"]["code"] == -32603
    assert official["requests"] == 0
    # Deliberate differences (docs/acp.md): dsh starts a session's MCP
    # servers at its first step and keeps the session when one fails (it is
    # retried with back-off), and refuses a cwd that is not a directory at
    # once instead of failing its first prompt.
    if not dsh_is_official:
        for name in ("stdio fails", "stdio missing", "http unreachable"):
            assert dsh.pop(name) == "accepted", name
            official.pop(name)
        assert dsh.pop("missing cwd") == {"error": {
            "code": -32602, "message": "Invalid params: cwd is not a directory: <base>/no/such/dir"}}
        official.pop("missing cwd")
        official.pop("missing cwd prompt")
    assert dsh == official


def test_mcp_servers_of_a_session_are_connected_and_called_like_the_official_profile(
        official_bin, dsh_bin, base_dir, homes, dsh_is_official):
    """A stdio and an HTTP MCP server given to session/new (env and headers
    passed): the model sees `mcp__<server>__<tool>`, and a call of each is
    reported with the server's answer (dsh first asks the client about the
    stdio `env` tool, which is not marked read-only: allowed once)."""
    with http_mcp_server(base_dir / "http-mcp-stderr.txt") as url:
        replies = [
            {"blocks": [{"tool_call": {"id": "m1", "name": "mcp__st__env", "arguments": {"name": "ACP_TEST_VAR"}}},
                        {"tool_call": {"id": "m2", "name": "mcp__hh__whoami", "arguments": {}}}]},
            {"text": "Both answered."},
        ]

        def drive(acp: Acp) -> dict:
            servers = [
                {"name": "st", "command": sys.executable, "args": [str(MCP_DIR / "stdio_server.py")],
                 "env": [{"name": "ACP_TEST_VAR", "value": "from-acp"}]},
                {"type": "http", "name": "hh", "url": url, "headers": [{"name": "X-Test-Token", "value": "tok-7"}]},
            ]
            session_id, _ = acp.new_session(mcpServers=servers)
            turn = acp.prompt(session_id, text("ask both servers"))
            names = sorted(t["name"] for t in acp.requests()[0]["body"]["tools"]
                           if t["name"].startswith("mcp__"))
            return {"turn": turn, "mcp tools": names}

        official, dsh, runs = differential(official_bin, dsh_bin, base_dir, homes, replies, drive)
    assert "mcp__st__echo" in official["mcp tools"] and "mcp__hh__whoami" in official["mcp tools"]
    assert [r.get("text") for r in official["turn"]["updates"] if r["update"] == "tool"] == [["from-acp"], ["tok-7"]]
    assert dsh == official
    check_kinds(runs["dsh"], {"m1": "mcp__st__env", "m2": "mcp__hh__whoami"}, dsh_is_official)
    # dsh asks before an MCP tool not marked read-only (`env`), not before `whoami` (read-only).
    assert sorted(runs["dsh"].permissions.values()) == ([] if dsh_is_official else ["m1"])


# ---------------------------------------------------------------------------
# session/prompt
# ---------------------------------------------------------------------------


def test_prompt_content_is_taken_and_refused_like_the_official_profile(official_bin, dsh_bin, base_dir, homes):
    """Unknown session, a missing or empty prompt, audio, an unknown block
    type: the same errors and no model request; a `resource_link` and two
    text blocks: the same text reaches the model."""

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()
        out = {}
        for name, params in {
            "unknown session": {"sessionId": "nope", "prompt": text("hi")},
            "unknown uuid": {"sessionId": "3f921242-c1d4-4b3b-b072-500acc32c279", "prompt": text("hi")},
            "no prompt": {"sessionId": session_id},
            "empty prompt": {"sessionId": session_id, "prompt": []},
            "audio": {"sessionId": session_id, "prompt": [{"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}]},
            "unknown block": {"sessionId": session_id, "prompt": [{"type": "bogus", "x": 1}]},
        }.items():
            out[name] = acp.call("session/prompt", params)
        out["requests before"] = len(acp.requests())
        out["link"] = acp.prompt(session_id, [{"type": "text", "text": "link"},
                                              {"type": "resource_link", "uri": "file:///x/b.txt", "name": "b.txt"}])
        out["two texts"] = acp.prompt(session_id, [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}])
        seen = []
        for request in acp.requests():
            user = [m for m in request["body"]["messages"] if m["role"] == "user"][-1]
            blocks = user["content"] if isinstance(user["content"], list) else [{"type": "text", "text": user["content"]}]
            seen.append(acp.mask(blocks[0]))  # the prompt's own block (the runtime context follows on turn 1)
        out["model saw"] = seen
        return out

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, [{"text": "ok one"}, {"text": "ok two"}], drive)
    assert official["audio"] == {"error": {"code": -32602,
                                           "message": "Invalid params: audio prompt content is not supported"}}
    assert official["empty prompt"] == {"error": {"code": -32602, "message": "Invalid params: empty prompt"}}
    assert official["requests before"] == 0
    assert official["model saw"][1] == {"type": "text", "text": "ab"}
    assert dsh == official


def test_image_and_embedded_prompts_are_refused_by_the_official_profile_and_taken_by_dsh(
        official_bin, dsh_bin, base_dir, homes, dsh_is_official):
    """Documented difference: the official profile refuses image and embedded
    resource prompts; dsh advertises and takes them (an embedded text resource
    becomes text naming its URI, an image blob an image)."""
    prompts = {
        "image": [{"type": "image", "data": PNG, "mimeType": "image/png"}],
        "text resource": [{"type": "text", "text": "see"}, {"type": "resource", "resource": {
            "uri": "file:///x/a.txt", "mimeType": "text/plain", "text": "RESOURCE BODY"}}],
        "blob resource": [{"type": "text", "text": "see2"}, {"type": "resource", "resource": {
            "uri": "file:///x/a.png", "mimeType": "image/png", "blob": PNG}}],
    }

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()
        out = {}
        for name, prompt in prompts.items():
            before = len(acp.requests())
            outcome = acp.prompt(session_id, prompt)["outcome"]
            asked = acp.requests()[before:]
            user = [m for m in asked[-1]["body"]["messages"] if m["role"] == "user"][-1] if asked else None
            out[name] = {"outcome": outcome, "user": json.dumps(user)}
        return out

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, [{"text": "seen"}] * 3, drive)
    assert official["image"]["outcome"] == {"error": {
        "code": -32602, "message": "Invalid params: inline image prompts were not advertised by this connection"}}
    for name in ("text resource", "blob resource"):
        assert official[name]["outcome"] == {"error": {
            "code": -32602, "message": "Invalid params: embedded resource prompt content is not supported"}}
    assert all(official[name]["user"] == "null" for name in prompts)
    if dsh_is_official:
        assert dsh == official
        return
    for name in prompts:
        assert dsh[name]["outcome"] == {"result": {"stopReason": "end_turn"}}, (name, dsh[name])
    # The image reaches the session; a text-only model is told of it (an attachment placeholder).
    for name in ("image", "blob resource"):
        user = dsh[name]["user"]
        assert PNG in user or re.search(r"image[^\"]*attachment sha256:[0-9a-f]+", user), (name, user)
    assert "file:///x/a.txt" in dsh["text resource"]["user"] and "RESOURCE BODY" in dsh["text resource"]["user"]


def test_text_reasoning_and_max_tokens_turns_update_like_the_official_profile(official_bin, dsh_bin, base_dir, homes):
    """A streamed text reply, reasoning then text (the official sends the
    thought too, sharing the step's messageId), and a reply cut by
    max_tokens: the same joined chunks, usage updates and stopReasons."""
    replies = [
        {"text": ["Hel", "lo ", "there."]},
        {"reasoning": ["Thinking ", "hard"], "text": ["Reason", "ed."]},
        {"text": "Cut off", "stop": "max_tokens"},
    ]

    def drive(acp: Acp) -> list:
        session_id, _ = acp.new_session()
        return [acp.prompt(session_id, text(p)) for p in ("plain", "think", "cut")]

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, replies, drive)
    assert [t["outcome"]["result"]["stopReason"] for t in official] == ["end_turn", "end_turn", "max_tokens"]
    assert [r["update"] for r in official[1]["updates"]] == ["agent_thought_chunk", "agent_message_chunk",
                                                            "usage_update"]
    assert official[1]["updates"][0]["messageId"] == official[1]["updates"][1]["messageId"]
    assert dsh == official


def test_tool_calls_update_like_the_official_profile(official_bin, dsh_bin, base_dir, homes, dsh_is_official):
    """write, edit, a failing edit, todo_write, bash exiting 3 and an unknown
    tool: the same tool call ids, raw inputs, statuses and final texts, in
    the same places among the text and usage updates; dsh's kinds, `diff`s
    and `plan` as docs/acp.md says."""
    replies = [
        {"blocks": [{"text": "Writing."}, {"tool_call": {"id": "w1", "name": "write", "arguments": {
            "file_path": "a.txt", "content": "one\ntwo\n"}}}]},
        {"blocks": [{"tool_call": {"id": "e1", "name": "edit", "arguments": {
            "file_path": "a.txt", "old_string": "two", "new_string": "TWO"}}}]},
        {"blocks": [{"tool_call": {"id": "e2", "name": "edit", "arguments": {
            "file_path": "a.txt", "old_string": "zzz", "new_string": "y"}}}]},
        {"text": "Edited."},
        {"blocks": [{"tool_call": {"id": "t1", "name": "todo_write", "arguments": {"todos": [
            {"content": "Do A", "status": "in_progress"}, {"content": "Do B", "status": "pending"}]}}}]},
        {"text": "Planned."},
        {"blocks": [{"reasoning": "plan"},
                    {"tool_call": {"id": "b1", "name": "bash", "arguments": {
                        "description": "Say hi", "command": "echo hi; echo err >&2; exit 3"}}},
                    {"tool_call": {"id": "x1", "name": "no_such_tool", "arguments": {"a": 1}}}]},
        {"text": "Done."},
    ]

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()
        turns = [acp.prompt(session_id, text(p)) for p in ("write and edit", "todo", "run")]
        return {"turns": turns, "file": (acp.workspace / "a.txt").read_text()}

    official, dsh, runs = differential(official_bin, dsh_bin, base_dir, homes, replies, drive)
    assert official["file"] == "one\nTWO\n"
    tools = {r["toolCallId"]: r for t in official["turns"] for r in t["updates"] if r["update"] == "tool"}
    assert {k: v["statuses"] for k, v in tools.items()} == {
        "w1": ["in_progress", "completed"], "e1": ["in_progress", "completed"], "e2": ["in_progress", "failed"],
        "t1": ["in_progress", "completed"], "b1": ["in_progress", "completed"], "x1": ["in_progress", "failed"]}
    assert tools["b1"]["text"] == ["hi\n[stderr]\nerr\n[exit code: 3]"]
    assert dsh == official
    # dsh's documented extras.
    dsh_run = runs["dsh"]
    check_kinds(dsh_run, {"w1": "write", "e1": "edit", "e2": "edit", "t1": "todo_write", "b1": "bash",
                          "x1": "no_such_tool"}, dsh_is_official)
    plans = [e for e in dsh_run.extras if isinstance(e, dict) and e.get("sessionUpdate") == "plan"]
    diffs = {k: v["diffs"] for k, v in dsh_run.tools.items()}
    if dsh_is_official:
        assert plans == [] and all(d == [] for d in diffs.values())
        return
    assert plans, "dsh sends no plan for todo_write"
    assert [(e["content"], e["status"]) for e in plans[-1]["entries"]] == [("Do A", "in_progress"),
                                                                           ("Do B", "pending")]
    for call_id in ("w1", "e1"):
        assert diffs[call_id], f"no diff for {call_id}"
        assert all(d["path"] == "<base>/ws/a.txt" for d in diffs[call_id]), diffs[call_id]
    assert any("TWO" in d["newText"] for d in diffs["e1"]), diffs["e1"]


def test_model_errors_answer_like_the_official_profile(official_bin, dsh_bin, base_dir, homes):
    """A 400 and a 401 from the model, then a truncated tool-call argument:
    the same JSON-RPC errors (not a stopReason), no updates, one request
    each (no retries), and the session stays usable."""
    replies = [
        {"error": {"code": "invalid_request_error", "message": "bad thing", "status": 400}},
        {"error": {"code": "authentication_error", "message": "bad key", "status": 401}},
        {"text": "after errors"},
        {"blocks": [{"tool_call": {"id": "r1", "name": "read", "arguments": "{\"file_path\": \"nope.txt\""}}]},
    ]

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()
        turns = [acp.prompt(session_id, text(p)) for p in ("e400", "e401", "ok", "truncated")]
        return {"turns": turns, "requests": len(acp.requests())}

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, replies, drive)
    assert [t["outcome"] for t in official["turns"][:2]] == [
        {"error": {"code": -32603, "message": "Internal error: turn failed: bad thing"}},
        {"error": {"code": -32603, "message": "Internal error: turn failed: bad key"}}]
    assert official["turns"][0]["updates"] == official["turns"][1]["updates"] == []
    assert official["requests"] == 4
    assert dsh == official


def test_a_second_prompt_of_a_busy_session_is_refused_like_the_official_profile(official_bin, dsh_bin, base_dir, homes):
    """While a prompt waits on the model, a second prompt of the same session
    is refused (and never reaches the model's history) while another
    session's prompt runs to its end."""
    replies = [{"text": "slow", "delay_ms": 2000}, {"text": "other"}, {"text": "next"}]

    def drive(acp: Acp) -> dict:
        busy_id, _ = acp.new_session()
        other_id, _ = acp.new_session()
        start = len(acp.client.frames)
        slow = acp.send("session/prompt", {"sessionId": busy_id, "prompt": text("slow one")})
        acp.wait_requests(1)
        refused = acp.send("session/prompt", {"sessionId": busy_id, "prompt": text("concurrent")})
        other = acp.send("session/prompt", {"sessionId": other_id, "prompt": text("other session")})
        refused_at, refused_frame = acp.response(refused)
        other_turn = acp.finish(other_id, other, start)
        other_at = acp.response(other)[0]
        slow_turn = acp.finish(busy_id, slow, start)
        slow_at = acp.response(slow)[0]
        next_turn = acp.prompt(busy_id, text("next one"))
        last = acp.requests()[-1]["body"]["messages"]
        prompts = [b.get("text") for m in last if m["role"] == "user" and isinstance(m["content"], list)
                   for b in m["content"] if b.get("text") in ("slow one", "concurrent", "next one")]
        return {"refused": acp.outcome(refused_frame), "other": other_turn, "slow": slow_turn, "next": next_turn,
                "refused before slow": refused_at < slow_at, "other before slow": other_at < slow_at,
                "history": prompts}

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, replies, drive)
    assert official["refused"] == {"error": {
        "code": -32602, "message": "Invalid params: a prompt is already in flight for this session"}}
    assert official["other before slow"] and official["refused before slow"]
    assert official["history"] == ["slow one", "next one"]
    assert dsh == official


def test_cancel_while_the_model_is_slow_ends_the_turn_like_the_official_profile(official_bin, dsh_bin, base_dir, homes):
    """session/cancel (a notification) while the model's reply is delayed 3 s:
    stopReason `cancelled` at once, no update; the session then goes on."""
    replies = [{"text": "too late", "delay_ms": 3000}, {"text": "after cancel"}]

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()
        start = len(acp.client.frames)
        request_id = acp.send("session/prompt", {"sessionId": session_id, "prompt": text("slow")})
        acp.wait_requests(1)
        sent = time.monotonic()
        acp.notify("session/cancel", {"sessionId": session_id})
        cancelled = acp.finish(session_id, request_id, start, timeout=10)
        took = time.monotonic() - sent
        after = acp.prompt(session_id, text("next"))
        return {"cancelled": cancelled, "quick": took < 2.0, "after": after}

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, replies, drive)
    assert official["cancelled"] == {"outcome": {"result": {"stopReason": "cancelled"}}, "updates": []}
    assert official["quick"]
    assert dsh == official


def test_cancel_while_bash_runs_ends_the_turn_like_the_official_profile(official_bin, dsh_bin, base_dir, homes):
    """session/cancel while a `bash` command sleeps 5 s: the call fails as
    aborted, stopReason `cancelled` well before the command would end; the
    next prompt carries on."""
    replies = [
        {"blocks": [{"text": "Sleeping."}, {"tool_call": {"id": "b1", "name": "bash", "arguments": {
            "description": "Sleep a while", "command": "touch started; sleep 5; echo woke"}}}]},
        {"text": "after cancel"},
    ]

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()
        start = len(acp.client.frames)
        request_id = acp.send("session/prompt", {"sessionId": session_id, "prompt": text("run it")})
        marker = acp.workspace / "started"
        deadline = time.monotonic() + FRAME_TIMEOUT
        while not marker.exists():
            assert time.monotonic() < deadline, "the command never started"
            time.sleep(0.02)  # polling interval only
        sent = time.monotonic()
        acp.notify("session/cancel", {"sessionId": session_id})
        cancelled = acp.finish(session_id, request_id, start, timeout=10)
        took = time.monotonic() - sent
        after = acp.prompt(session_id, text("next"))
        results = [b for m in acp.requests()[-1]["body"]["messages"] if isinstance(m["content"], list)
                   for b in m["content"] if b.get("type") == "tool_result"]
        return {"cancelled": cancelled, "quick": took < 3.0, "after": after,
                "tool results": len(results)}

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, replies, drive)
    assert official["cancelled"]["outcome"] == {"result": {"stopReason": "cancelled"}}
    tool = official["cancelled"]["updates"][-1]
    assert (tool["toolCallId"], tool["statuses"], tool["text"]) == ("b1", ["in_progress", "failed"],
                                                                    ["Error: tool call aborted"])
    assert official["quick"] and official["tool results"] == 1
    assert dsh == official


# ---------------------------------------------------------------------------
# session/set_config_option
# ---------------------------------------------------------------------------


def test_set_config_option_answers_and_applies_like_the_official_profile(official_bin, dsh_bin, base_dir, homes):
    """model and reasoning_effort: the same configOptions answers and errors,
    and the next model requests use the chosen model and effort (`off`: no
    effort, thinking disabled)."""
    replies = [{"text": "one"}, {"text": "two"}, {"text": "three"}]

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()

        def set_option(config_id: str, value: Any, sid: str = session_id) -> dict:
            return acp.call("session/set_config_option", {"sessionId": sid, "configId": config_id, "value": value})

        out = {"pro": set_option("model", model_value("deepseek-v4-pro")),
               "low": set_option("reasoning_effort", "low")}
        out["turn 1"] = acp.prompt(session_id, text("one"))
        out["errors"] = {
            "bogus id": set_option("bogus", "low"),
            "bad effort": set_option("reasoning_effort", "ultra"),
            "bare model": set_option("model", "deepseek-v4-pro"),
            "unknown model": set_option("model", model_value("nope")),
            "back to the default": set_option("model", model_value("deepseek-v4-flash")),
            "unknown session": set_option("model", model_value("deepseek-v4-pro"), "nope"),
            "number": set_option("model", 5),
            "no value": acp.call("session/set_config_option", {"sessionId": session_id,
                                                               "configId": "reasoning_effort"}),
        }
        out["off"] = set_option("reasoning_effort", "off")
        out["turn 2"] = acp.prompt(session_id, text("two"))
        out["flash"] = set_option("model", model_value("deepseek-flash"))
        out["max"] = set_option("reasoning_effort", "max")
        out["turn 3"] = acp.prompt(session_id, text("three"))
        out["asked"] = acp.asked()
        return out

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, replies, drive)
    assert [a["model"] for a in official["asked"]] == ["deepseek-v4-pro", "deepseek-v4-pro", "deepseek-flash"]
    assert [a["output_config"] for a in official["asked"]] == [{"effort": "low"}, None, {"effort": "max"}]
    assert official["asked"][1]["thinking"] == {"type": "disabled"}
    assert official["errors"]["bogus id"] == {"error": {
        "code": -32602, "message": "Invalid params: unknown session config option: bogus"}}
    current = {o["id"]: o["currentValue"] for o in official["max"]["result"]["configOptions"]}
    assert current == {"model": model_value("deepseek-flash"), "reasoning_effort": "max"}
    assert dsh == official


# ---------------------------------------------------------------------------
# close, list, resume, process end
# ---------------------------------------------------------------------------


def test_close_and_list_answer_like_the_official_profile(official_bin, dsh_bin, base_dir, homes, dsh_is_official):
    """session/close answers {} and forgets the session (a prompt, a second
    close: unknown session); errors alike. session/list: the official
    always answers no sessions, dsh the sessions of DSH_HOME (documented
    difference, asserted per side)."""

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()
        turn = acp.prompt(session_id, text("hello"))
        lists = {"all": acp.call("session/list", {}), "cwd": acp.call("session/list", {"cwd": acp.ws}),
                 "other cwd": acp.call("session/list", {"cwd": str(acp.base / "elsewhere")})}
        out = {"turn": turn, "list without params": acp.call("session/list"),
               "close": acp.call("session/close", {"sessionId": session_id}),
               "prompt closed": acp.call("session/prompt", {"sessionId": session_id, "prompt": text("again")}),
               "close again": acp.call("session/close", {"sessionId": session_id}),
               "close unknown": acp.call("session/close", {"sessionId": "nope"}),
               "close no id": acp.call("session/close", {}),
               "config of closed": acp.call("session/set_config_option", {
                   "sessionId": session_id, "configId": "reasoning_effort", "value": "low"}),
               "requests": len(acp.requests())}
        return out, lists

    (official, official_lists), (dsh, dsh_lists), _ = differential(
        official_bin, dsh_bin, base_dir, homes, [{"text": "hi"}], drive)
    assert official["close"] == {"result": {}}
    assert official["prompt closed"] == {"error": {"code": -32602,
                                                   "message": "Invalid params: unknown session: <session-1>"}}
    assert official["requests"] == 1
    assert dsh == official
    assert all(v == {"result": {"sessions": []}} for v in official_lists.values()), official_lists
    if dsh_is_official:
        assert dsh_lists == official_lists
        return
    for name in ("all", "cwd"):
        sessions = dsh_lists[name]["result"]["sessions"]
        assert [(s["sessionId"], s["cwd"]) for s in sessions] == [("<session-1>", "<base>/ws")], dsh_lists
    assert dsh_lists["other cwd"] == {"result": {"sessions": []}}


def test_resume_in_a_new_process_answers_like_the_official_profile(official_bin, dsh_bin, base_dir, homes, dsh_is_official):
    """A session made, configured (v4-pro, max) and prompted in one process is
    resumed by the next one on the same DSH_HOME: wrong cwd, unknown ids and
    a second resume are refused alike; the resume answers the stored config
    (dsh adds `modes`) and the next prompt asks with that model and effort
    and the whole history."""
    replies = [{"text": "first"}, {"text": "second"}]

    def drive(acp: Acp) -> dict:
        session_id, _ = acp.new_session()
        for config_id, value in (("model", model_value("deepseek-v4-pro")), ("reasoning_effort", "max")):
            assert "result" in acp.call("session/set_config_option", {
                "sessionId": session_id, "configId": config_id, "value": value})
        first = acp.prompt(session_id, text("first"))
        out = {"first": first, "exit": acp.eof()}
        acp.start()
        acp.initialize()
        out["wrong cwd"] = acp.call("session/resume", {"sessionId": session_id, "cwd": str(acp.base),
                                                       "mcpServers": []})
        out["unknown"] = acp.call("session/resume", {"sessionId": "nope", "cwd": acp.ws, "mcpServers": []})
        out["unknown uuid"] = acp.call("session/resume", {"sessionId": "11111111-2222-4333-8444-555555555555",
                                                          "cwd": acp.ws, "mcpServers": []})
        resumed = acp.call("session/resume", {"sessionId": session_id, "cwd": acp.ws})
        out["modes"] = resumed.get("result", {}).pop("modes", _MISSING)
        out["resume"] = resumed
        out["again"] = acp.call("session/resume", {"sessionId": session_id, "cwd": acp.ws, "mcpServers": []})
        out["second"] = acp.prompt(session_id, text("second"))
        fresh_id, _ = acp.new_session()
        out["resume live"] = acp.call("session/resume", {"sessionId": fresh_id, "cwd": acp.ws, "mcpServers": []})
        out["asked"] = acp.asked()
        out["history"] = [m["role"] for m in acp.requests()[-1]["body"]["messages"]]
        return out

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, replies, drive)
    check_modes(dsh.pop("modes"), dsh_is_official)
    assert official.pop("modes") is _MISSING
    assert official["exit"] == 0
    assert official["wrong cwd"] == {"error": {"code": -32602,
                                               "message": "Invalid params: session cwd does not match: <base>"}}
    assert official["unknown"] == {"error": {"code": -32602, "message": "Invalid params: session is not resumable: nope"}}
    assert official["again"] == {"error": {"code": -32602,
                                           "message": "Invalid params: session is already active: <session-1>"}}
    assert {o["id"]: o["currentValue"] for o in official["resume"]["result"]["configOptions"]} == {
        "model": model_value("deepseek-v4-pro"), "reasoning_effort": "max"}
    assert official["asked"][-1] == {"model": "deepseek-v4-pro", "output_config": {"effort": "max"},
                                     "thinking": {"type": "enabled"}}
    assert official["history"].count("assistant") == 1
    assert dsh == official


def test_stdin_eof_ends_the_process_like_the_official_profile(official_bin, dsh_bin, base_dir, homes):
    """stdin EOF ends the process with 0, idle or while a prompt waits on the
    model (that prompt is not answered)."""

    def drive(acp: Acp) -> dict:
        idle = acp.eof()
        acp.start()
        acp.initialize()
        session_id, _ = acp.new_session()
        request_id = acp.send("session/prompt", {"sessionId": session_id, "prompt": text("slow")})
        acp.wait_requests(1)
        busy = acp.eof()
        acp.client.wait_eof()
        answered = any(is_response(f) and f.get("id") == request_id for f in acp.client.frames)
        return {"idle": idle, "busy": busy, "prompt answered": answered}

    official, dsh, _ = differential(official_bin, dsh_bin, base_dir, homes, [{"text": "late", "delay_ms": 3000}], drive)
    assert official == {"idle": 0, "busy": 0, "prompt answered": False}
    assert dsh == official
