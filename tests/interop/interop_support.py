"""Shared helpers for the dsh-rs Python interop tests.

Everything here is plain Python: a raw line-level JSON-RPC client that spawns
the runtime with ``subprocess``, scenario-file writing for the ``scripted``
provider, and small helpers to pick events out of notification streams.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import pytest

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parent.parent

# Upper bounds only: nothing here sleeps to make an assertion.
FRAME_TIMEOUT = 30.0  # waiting for one expected frame
RUN_TIMEOUT = 60.0  # one Session.run
EXIT_TIMEOUT = 5.0  # process exit after shutdown / EOF / signal

SERVER_NAME = "deepseek-harness-sdk-runtime"
POLICY_EVENT_TYPES = ["permission/preset", "sandbox/mode", "approval/policy"]
DELIVERY_ACCEPTED = "session-log-deepseek/delivery-accepted"

_MISSING = object()


def dsh_bin_path() -> Path:
    """The binary under test: $DSH_BIN, else <repo>/target/debug/dsh."""
    env = os.environ.get("DSH_BIN", "").strip()
    if env:
        return Path(env).expanduser().resolve()
    return REPO_ROOT / "target" / "debug" / "dsh"


def transcripts_dir() -> Path:
    """Official reference transcripts ($DSH_TRANSCRIPTS, else the copy the
    repository holds: tests/fixtures/official-transcripts)."""
    env = os.environ.get("DSH_TRANSCRIPTS", "").strip()
    if env:
        return Path(env).expanduser().resolve()
    return REPO_ROOT / "tests" / "fixtures" / "official-transcripts"


def clean_env(dsh_home: Path | str | None, home: Path | str, **extra: str) -> dict[str, str]:
    """The parent environment without DSH_*/DEEPSEEK_* knobs, with our DSH_HOME and HOME."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("DSH_") and not k.startswith("DEEPSEEK_")
    }
    env["HOME"] = str(home)
    if dsh_home is not None:
        env["DSH_HOME"] = str(dsh_home)
    env.update(extra)
    return env


def compact(obj: Any) -> str:
    """Serialise like the Python SDK does (compact, ASCII with \\u escapes)."""
    return json.dumps(obj, separators=(",", ":"))


# ---------------------------------------------------------------------------
# Scenario files for the scripted provider
# ---------------------------------------------------------------------------


def write_scenario(directory: Path, replies: list[dict], name: str | None = None, agents: list[dict] = (),
                   search: list[dict] = ()) -> str:
    """Write a scenario file (JSON, which is also YAML) and return its absolute path.
    ``agents`` are per-agent scripts (``{"when": <task text>, "replies": [...]}``);
    ``search`` the fake model server's web search answers."""
    path = Path(directory) / (name or f"scenario-{uuid.uuid4().hex[:8]}.json")
    scenario = {"replies": replies}
    if agents:
        scenario["agents"] = list(agents)
    if search:
        scenario["search"] = list(search)
    path.write_text(json.dumps(scenario, indent=2), encoding="utf-8")
    return str(path.resolve())


# ---------------------------------------------------------------------------
# Frame / event helpers
# ---------------------------------------------------------------------------


def is_response(frame: dict) -> bool:
    return "id" in frame and "method" not in frame and ("result" in frame or "error" in frame)


def is_notification(frame: dict) -> bool:
    return "method" in frame and "id" not in frame


def event_of(frame: dict) -> dict | None:
    """The event of a ``session.event`` frame, else None."""
    if frame.get("method") == "session.event":
        return frame["params"]["event"]
    return None


def session_events(frames: Iterable[dict], session_id: str) -> list[dict]:
    return [
        f["params"]["event"]
        for f in frames
        if f.get("method") == "session.event" and f["params"].get("sessionId") == session_id
    ]


def types(events: Iterable[dict]) -> list[str]:
    return [e["type"] for e in events]


def seqs(events: Iterable[dict]) -> list[int]:
    return [e["seq"] for e in events]


def first(events: Iterable[dict], type_: str) -> dict:
    for e in events:
        if e["type"] == type_:
            return e
    raise AssertionError(f"no {type_} event in {types(events)}")


def all_of(events: Iterable[dict], type_: str) -> list[dict]:
    return [e for e in events if e["type"] == type_]


def text_of(message: dict) -> str:
    return "".join(b.get("text", "") for b in message.get("content", []) if b.get("type") == "text")


def notification_events(notifications, session_id: str) -> list[dict]:
    """Events of one session from SDK ``Notification`` objects."""
    return [
        n.payload["event"]
        for n in notifications
        if n.method == "session.event" and n.payload.get("sessionId") == session_id
    ]


# ---------------------------------------------------------------------------
# Raw line-level client
# ---------------------------------------------------------------------------


class RawClient:
    """Spawns the runtime and talks newline-delimited JSON-RPC at the byte level.

    All stdout lines are kept (``raw_lines``); each is parsed into ``frames``
    (an unparsable line is recorded as ``{"__unparsable__": line}``, which
    tests treat as a failure). Waiting helpers take timeouts as upper bounds.
    """

    def __init__(
        self,
        dsh_bin: Path,
        dsh_home: Path | None,
        cwd: Path,
        home: Path,
        profile: str = "sdk",
        env: dict[str, str] | None = None,
        args: list[str] | None = None,
    ) -> None:
        argv = [str(dsh_bin)] + (args if args is not None else ["--profile", profile])
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=str(cwd),
            env=env if env is not None else clean_env(dsh_home, home),
        )
        self.raw_lines: list[bytes] = []
        self.frames: list[dict] = []
        self.stderr = b""
        self.eof = False
        self._cond = threading.Condition()
        # Cleared by pause_reading: the reader stops taking lines (the
        # runtime's writes then block once the pipe is full).
        self._reading = threading.Event()
        self._reading.set()
        self._reader = threading.Thread(target=self._read_stdout, daemon=True)
        self._reader.start()
        self._err_reader = threading.Thread(target=self._read_stderr, daemon=True)
        self._err_reader.start()

    # -- reading ------------------------------------------------------------

    def pause_reading(self) -> None:
        """Stop reading stdout (at most one more line is taken)."""
        self._reading.clear()

    def resume_reading(self) -> None:
        self._reading.set()

    def _next_line(self) -> bytes:
        self._reading.wait()
        return self.proc.stdout.readline()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in iter(self._next_line, b""):
            try:
                frame = json.loads(line.decode("utf-8"))
                if not isinstance(frame, dict):
                    frame = {"__unparsable__": line}
            except (UnicodeDecodeError, ValueError):
                frame = {"__unparsable__": line}
            with self._cond:
                self.raw_lines.append(line)
                self.frames.append(frame)
                self._cond.notify_all()
        with self._cond:
            self.eof = True
            self._cond.notify_all()

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        data = self.proc.stderr.read()
        self.stderr = data or b""

    def wait_for(
        self,
        predicate: Callable[[dict], bool],
        start: int = 0,
        timeout: float = FRAME_TIMEOUT,
        what: str = "frame",
    ) -> tuple[int, dict]:
        """Wait for the first frame at index >= start matching predicate."""
        deadline = time.monotonic() + timeout
        with self._cond:
            index = start
            while True:
                while index < len(self.frames):
                    if predicate(self.frames[index]):
                        return index, self.frames[index]
                    index += 1
                if self.eof:
                    raise AssertionError(f"stdout closed before {what}; frames: {self.summary()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out after {timeout}s waiting for {what}; frames: {self.summary()}")
                self._cond.wait(remaining)

    def wait_count(
        self, count: int, timeout: float = FRAME_TIMEOUT, counted: Callable[[dict], bool] | None = None
    ) -> None:
        """Wait until at least ``count`` frames (those ``counted``, default all) arrived."""
        deadline = time.monotonic() + timeout

        def have() -> int:
            return len(self.frames) if counted is None else sum(1 for f in self.frames if counted(f))

        with self._cond:
            while have() < count:
                if self.eof:
                    raise AssertionError(f"stdout closed with {have()} of {count} frames")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out waiting for {count} frames, have {have()}")
                self._cond.wait(remaining)

    def wait_eof(self, timeout: float = EXIT_TIMEOUT) -> list[dict]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while not self.eof:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"stdout not closed within {timeout}s")
                self._cond.wait(remaining)
            return list(self.frames)

    def wait_exit(self, timeout: float = EXIT_TIMEOUT) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"runtime did not exit within {timeout}s") from None

    def response_to(self, request_id: Any, start: int = 0, timeout: float = FRAME_TIMEOUT) -> tuple[int, dict]:
        return self.wait_for(
            lambda f: is_response(f) and f.get("id") == request_id and type(f.get("id")) is type(request_id),
            start=start,
            timeout=timeout,
            what=f"response to id {request_id!r}",
        )

    def status(self, session_id: str, status: str, start: int = 0, timeout: float = FRAME_TIMEOUT) -> int:
        index, _ = self.wait_for(
            lambda f: f.get("method") == "session.status"
            and f["params"].get("sessionId") == session_id
            and f["params"].get("status") == status,
            start=start,
            timeout=timeout,
            what=f"session.status {status} for {session_id}",
        )
        return index

    # -- writing ------------------------------------------------------------

    def send_raw(self, data: bytes | str) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, obj: Any) -> None:
        self.send_raw(compact(obj) + "\n")

    def send_request(self, method: str, params: Any = _MISSING, id: Any = None) -> Any:
        request_id = str(uuid.uuid4()) if id is None else id
        frame: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not _MISSING:
            frame["params"] = params
        self.send(frame)
        return request_id

    def request(self, method: str, params: Any = _MISSING, id: Any = None, timeout: float = FRAME_TIMEOUT) -> dict:
        """Send a request and return its response frame (notifications stay in ``frames``)."""
        start = len(self.frames)
        request_id = self.send_request(method, params, id)
        return self.response_to(request_id, start=start, timeout=timeout)[1]

    def result(self, method: str, params: Any = _MISSING, **kw: Any) -> Any:
        response = self.request(method, params, **kw)
        assert "error" not in response, f"{method} failed: {response}"
        return response["result"]

    def error(self, method: str, params: Any = _MISSING, **kw: Any) -> dict:
        response = self.request(method, params, **kw)
        assert "error" in response, f"{method} should fail: {response}"
        assert response["error"]["code"] == -32603, response
        return response["error"]

    def initialize(self, cwd: Path | str, model: str = "echo", provider: str = "scripted", **extra: Any) -> dict:
        return self.result("initialize", {"cwd": str(cwd), "provider": provider, "model": model, **extra})

    def prompt(self, session_id: str, text: str) -> str:
        """Send session/prompt and return the messageId (does not wait for the turn)."""
        result = self.result(
            "session/prompt", {"sessionId": session_id, "contentBlocks": [{"type": "text", "text": text}]}
        )
        return result["messageId"]

    def close_stdin(self) -> None:
        if self.proc.stdin and not self.proc.stdin.closed:
            try:
                self.proc.stdin.close()
            except BrokenPipeError:
                pass

    def shutdown(self) -> int:
        """Send shutdown, expect {} and an exit code 0 with stdout closed."""
        assert self.result("shutdown") == {}
        self.wait_eof()
        return self.wait_exit()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.close_stdin()

    # -- diagnostics --------------------------------------------------------

    def summary(self, limit: int = 60) -> str:
        out = []
        for f in self.frames[-limit:]:
            if "__unparsable__" in f:
                out.append(f"UNPARSABLE {f['__unparsable__'][:200]!r}")
            elif f.get("method") == "session.event":
                e = f["params"]["event"]
                out.append(f"event {f['params'].get('sessionId')} {e.get('type')} seq={e.get('seq')}")
            elif f.get("method"):
                out.append(f"{f['method']} {json.dumps(f.get('params'))[:200]}")
            else:
                out.append(json.dumps(f)[:300])
        return "\n  " + "\n  ".join(out)


def assert_valid_frames(client: RawClient) -> None:
    """Every stdout line is one compact JSON-RPC object (raw UTF-8, no CR)."""
    assert client.raw_lines, "no output at all"
    for line in client.raw_lines:
        assert line.endswith(b"\n"), f"unterminated line {line[:200]!r}"
        body = line[:-1]
        assert b"\r" not in body and b"\n" not in body, f"raw CR/LF inside a frame: {line[:200]!r}"
        text = body.decode("utf-8")  # strict UTF-8
        frame = json.loads(text)
        assert isinstance(frame, dict), f"not a JSON object: {line[:200]!r}"
        assert frame.get("jsonrpc") == "2.0", f"missing jsonrpc 2.0: {line[:200]!r}"
        assert ("method" in frame) != ("id" in frame), f"neither a notification nor a response: {line[:200]!r}"


# ---------------------------------------------------------------------------
# Bounded SDK calls
# ---------------------------------------------------------------------------


def run_bounded(session, prompt, timeout: float = RUN_TIMEOUT):
    """``Session.run`` with an upper bound: on timeout the runtime is killed and the test fails."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = session.run(prompt)
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            box["error"] = exc

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        proc = session.harness.client._proc
        if proc is not None and proc.poll() is None:
            proc.kill()
        thread.join(5)
        pytest.fail(f"Session.run({prompt!r}) did not return within {timeout}s (no idle for the session?)")
    if "error" in box:
        raise box["error"]
    return box["result"]


def collect_until_idle(subscription, session_id: str, timeout: float = RUN_TIMEOUT) -> list:
    """Drain an SDK notification subscription until the session reports idle (bounded)."""
    collected: list = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        subscription.drain(collected.append)
        for n in collected:
            if n.method == "session.status" and n.payload.get("sessionId") == session_id and n.payload.get("status") == "idle":
                return collected
        time.sleep(0.02)  # polling interval only
    raise AssertionError(f"no idle for {session_id} within {timeout}s; got {[n.method for n in collected]}")


# ---------------------------------------------------------------------------
# The fake model server (crates/dsh-fake-model)
# ---------------------------------------------------------------------------


def fake_model_path() -> Path:
    """$DSH_FAKE_MODEL, else the dsh-fake-model binary beside the dsh under test."""
    env = os.environ.get("DSH_FAKE_MODEL", "").strip()
    if env:
        return Path(env).expanduser().resolve()
    return dsh_bin_path().parent / "dsh-fake-model"


class FakeModel:
    """A running dsh-fake-model playing one scenario; records every request."""

    def __init__(self, directory: Path, replies: list[dict], agents: list[dict] = (), search: list[dict] = ()) -> None:
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        scenario = write_scenario(directory, replies, agents=agents, search=search)
        self.record = directory / f"requests-{uuid.uuid4().hex[:8]}.jsonl"
        self.proc = subprocess.Popen(
            [str(fake_model_path()), "--scenario", scenario, "--record", str(self.record)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"dsh-fake-model did not start: {self.proc.stderr.read()}")
        self.base_url = json.loads(line)["baseUrl"]

    def requests(self) -> list[dict]:
        if not self.record.exists():
            return []
        return [json.loads(line) for line in self.record.read_text(encoding="utf-8").splitlines() if line]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()


def alive(pid: int) -> bool:
    """Whether the process runs (a zombie counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def wait_gone(pids: list[int], timeout: float = 5.0) -> list[int]:
    """The processes of `pids` still running after at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.02)  # polling interval only
    return [p for p in pids if alive(p)]


def with_marker(marker: str) -> list[int]:
    """Running processes whose command line holds `marker`."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes() and alive(int(entry)):
                    found.append(int(entry))
            except OSError:
                continue
    return found


@contextlib.contextmanager
def http_mcp_server(stderr_path: Path, *args: str) -> Iterator[str]:
    """tests/mcp/http_server.py (extra `args`, e.g. a marker) on a free port
    of 127.0.0.1, run by this venv's Python: yields its URL, then stops it."""
    server = REPO_ROOT / "tests" / "mcp" / "http_server.py"
    with open(stderr_path, "wb") as stderr:
        proc = subprocess.Popen([sys.executable, str(server), "0", *args], stdout=subprocess.PIPE, stderr=stderr)
    lines: queue.Queue[bytes] = queue.Queue()
    threading.Thread(target=lambda: lines.put(proc.stdout.readline()), daemon=True).start()
    try:
        try:
            line = lines.get(timeout=FRAME_TIMEOUT)
        except queue.Empty:
            line = b""
        assert line, f"http_server.py did not start: {stderr_path.read_text()[-2000:]}"
        yield json.loads(line)["url"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=EXIT_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
