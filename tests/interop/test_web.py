"""`dsh web` (issue 32, first part) without a browser: the launch, the
token → cookie exchange, the Host/Origin fence, the bounds, and the SDK
protocol through the page's API (`POST /api/rpc`, Server-Sent Events on
`GET /api/events`, `POST /api/approval`) against the real binary and the
offline `scripted` model. Every request is plain HTTP from the standard
library, so a refusal is exactly what a hostile page or a DNS-rebinding
attacker would get. The contract is docs/web.md.

Run:  cd /work/main && DSH_BIN=$PWD/target/debug/dsh \\
        target/venv/bin/python -m pytest tests/interop/test_web.py -q -p no:cacheprovider
"""

from __future__ import annotations

import contextlib
import http.client
import json
import queue
import re
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from interop_support import EXIT_TIMEOUT, FRAME_TIMEOUT, clean_env, dsh_bin_path

URL = re.compile(r"^dsh web: (http://(127\.0\.0\.1|\[::1\]):(\d+)/)\?token=([A-Za-z0-9_-]{43})$")
UNAUTHENTICATED = "dsh web authentication required; reopen the URL printed by dsh web."


class Web:
    """A running `dsh web` and plain HTTP requests to it."""

    def __init__(self, proc: subprocess.Popen, line: str) -> None:
        self.proc = proc
        match = URL.match(line)
        assert match, line
        self.root, host, port, self.token = match.group(1), match.group(2), int(match.group(3)), match.group(4)
        self.host = host.strip("[]")
        self.port = port
        self.authority = f"{host}:{port}"
        self.cookie: str | None = None

    def request(self, method: str, path: str, body: bytes | str | None = None, headers: dict | None = None,
                cookie: bool = True) -> tuple[int, dict, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=FRAME_TIMEOUT)
        sent = {"Host": self.authority}
        if cookie and self.cookie:
            sent["Cookie"] = self.cookie
        sent.update(headers or {})
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        for name, value in sent.items():
            conn.putheader(name, value)
        data = body.encode() if isinstance(body, str) else body
        if data is not None:
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        response = conn.getresponse()
        payload = response.read()
        conn.close()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, payload

    def login(self) -> None:
        status, headers, _ = self.request("GET", f"/?token={self.token}", cookie=False)
        assert status == 303, status
        self.cookie = headers["set-cookie"].split(";")[0]

    def rpc(self, method: str, params: dict) -> dict:
        status, _, body = self.request("POST", "/api/rpc", json.dumps({"method": method, "params": params}),
                                       {"Content-Type": "application/json", "Origin": self.root.rstrip("/")})
        assert status == 200, (status, body)
        return json.loads(body)

    def result(self, method: str, params: dict):
        answer = self.rpc(method, params)
        assert "result" in answer, answer
        return answer["result"]


class Live:
    """`GET /api/events` read on a thread: (event, data) pairs in order."""

    def __init__(self, web: Web) -> None:
        self.conn = http.client.HTTPConnection(web.host, web.port, timeout=FRAME_TIMEOUT)
        self.conn.putrequest("GET", "/api/events", skip_host=True, skip_accept_encoding=True)
        self.conn.putheader("Host", web.authority)
        self.conn.putheader("Cookie", web.cookie or "")
        self.conn.endheaders()
        self.response = self.conn.getresponse()
        assert self.response.status == 200
        assert self.response.getheader("content-type") == "text/event-stream"
        self.messages: queue.Queue = queue.Queue()
        self.seen: list[tuple[str, dict]] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        event, data = None, []
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: "):
                    data.append(line[6:])
                elif line == "" and event:
                    self.messages.put((event, json.loads("\n".join(data))))
                    event, data = None, []
        except (OSError, ValueError, AttributeError):
            # The connection was closed by the test (http.client drops its
            # socket under the reader).
            pass

    def wait(self, predicate, what: str, timeout: float = FRAME_TIMEOUT) -> tuple[str, dict]:
        deadline = time.monotonic() + timeout
        while True:
            for item in self.seen:
                if predicate(*item):
                    return item
            remaining = deadline - time.monotonic()
            assert remaining > 0, f"no {what} within {timeout}s; seen: {[e for e, _ in self.seen][-20:]}"
            try:
                self.seen.append(self.messages.get(timeout=min(remaining, 0.5)))
            except queue.Empty:
                pass

    def event(self, session: str, kind: str) -> dict:
        _, data = self.wait(lambda e, d: e == "notification" and d["method"] == "session.event"
                            and d["params"]["sessionId"] == session and d["params"]["event"]["type"] == kind, kind)
        return data["params"]["event"]

    def idle(self, session: str) -> None:
        self.wait(lambda e, d: e == "notification" and d["method"] == "session.status"
                  and d["params"] == {"sessionId": session, "status": "idle"}, f"{session} idle")

    def close(self) -> None:
        # Shut the socket first: the reader thread holds the response's
        # buffer while it waits for the next message.
        with contextlib.suppress(OSError):
            self.conn.sock.shutdown(socket.SHUT_RDWR)
        self.conn.close()


@pytest.fixture
def start_web(dsh_home, home, workspace):
    """start_web(*args) -> a running `dsh web --no-open --port 0 *args` (stopped at teardown)."""
    started: list[subprocess.Popen] = []

    def start(*args: str, expect_exit: bool = False):
        proc = subprocess.Popen([str(dsh_bin_path()), "web", "--no-open", "--port", "0", *args],
                                cwd=workspace, env=clean_env(dsh_home, home), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        started.append(proc)
        if expect_exit:
            out, err = proc.communicate(timeout=FRAME_TIMEOUT)
            return proc.returncode, out, err
        line = proc.stdout.readline().rstrip("\n")
        assert line, proc.stderr.read()
        return Web(proc, line)

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def bash(command: str, call_id: str = "toolu_1", escalate: bool = False) -> dict:
    arguments = {"description": "Run", "command": command}
    if escalate:
        arguments |= {"sandbox_permissions": "danger-full-access", "justification": "The task needs it."}
    return {"blocks": [{"tool_call": {"id": call_id, "name": "bash", "arguments": arguments}}]}


# ---------------------------------------------------------------------------
# Launch and authentication
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(("host", "message"), [
    ("0.0.0.0", "--host 0.0.0.0 is not one concrete address: wildcard addresses are refused"),
    ("::", "--host :: is not one concrete address: wildcard addresses are refused"),
    ("localhost", "--host must be one IPv4 or IPv6 literal of a local interface, got \"localhost\""),
])
def test_a_wildcard_or_a_name_is_refused_at_launch(start_web, host, message):
    code, out, err = start_web("--host", host, expect_exit=True)
    assert code == 2 and out == ""
    assert err.startswith(f"dsh web: {message}"), err


def test_without_the_token_every_request_is_refused(start_web):
    web = start_web()
    for path in ("/", "/api/info", "/app.js", "/api/events", "/?token=wrong"):
        status, headers, body = web.request("GET", path)
        assert (status, body.decode()) == (401, UNAUTHENTICATED), path
        assert "set-cookie" not in headers
    status, _, body = web.request("POST", "/api/rpc", json.dumps({"method": "session/list", "params": {}}))
    assert status == 401


def test_the_token_is_exchanged_for_a_strict_http_only_cookie(start_web):
    web = start_web("--provider", "scripted")
    status, headers, _ = web.request("GET", f"/?token={web.token}")
    assert status == 303 and headers["location"] == "./"
    cookie = headers["set-cookie"]
    name_value, *attributes = [part.strip() for part in cookie.split(";")]
    assert name_value.startswith(f"dsh-web-{web.port}=")
    assert set(attributes) == {"Max-Age=2592000", "Path=/", "HttpOnly", "SameSite=Strict"}
    web.cookie = name_value
    status, headers, body = web.request("GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    csp = headers["content-security-policy"]
    assert "default-src 'self'" in csp and "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert headers["x-content-type-options"] == "nosniff"
    assert "access-control-allow-origin" not in headers
    status, headers, _ = web.request("GET", "/app.js")
    assert status == 200 and headers["content-type"].startswith("text/javascript")
    info = json.loads(web.request("GET", "/api/info")[2])
    assert info["provider"] == "scripted" and info["model"] == "echo"


def test_a_foreign_host_is_refused_even_with_the_cookie(start_web):
    web = start_web()
    web.login()
    for host in ("evil.example", "evil.example:80", f"127.0.0.1:{web.port + 1}", "127.0.0.1"):
        status, _, body = web.request("GET", "/api/info", headers={"Host": host})
        assert status == 403 and b"Host" in body, host
    # The rebinding attacker cannot get a cookie either.
    status, headers, _ = web.request("GET", f"/?token={web.token}", headers={"Host": "evil.example"}, cookie=False)
    assert status == 403 and "set-cookie" not in headers
    assert web.request("GET", "/api/info", headers={"Host": f"localhost:{web.port}"})[0] == 200


@pytest.mark.parametrize("headers", [
    {"Origin": "http://evil.example"},
    {"Origin": "null"},
    {"Sec-Fetch-Site": "cross-site"},
])
def test_cross_origin_requests_and_live_channels_are_refused(start_web, headers):
    web = start_web()
    web.login()
    body = json.dumps({"method": "session/list", "params": {}})
    status, _, text = web.request("POST", "/api/rpc", body, headers)
    assert status == 403 and b"cross-origin" in text
    assert web.request("GET", "/api/events", headers=headers)[0] == 403


def test_the_public_url_is_printed_and_trusted_authorities_admitted(dsh_home, home, workspace):
    proc = subprocess.Popen([str(dsh_bin_path()), "web", "--no-open", "--port", "0", "--public-url",
                             "https://app.example/dsh", "--trusted-host", "dev.internal:8443"],
                            cwd=workspace, env=clean_env(dsh_home, home), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().rstrip("\n")
        match = re.match(r"^dsh web: https://app\.example/dsh/\?token=([A-Za-z0-9_-]{43})$", line)
        assert match, line
        listening = proc.stderr.readline()
        port = re.search(r"listening on 127\.0\.0\.1:(\d+) ", listening)
        assert port, listening
        web = Web(proc, f"dsh web: http://127.0.0.1:{port.group(1)}/?token={match.group(1)}")
        web.login()
        for host in ("dev.internal:8443", f"127.0.0.1:{web.port}"):
            origin = {"Origin": f"https://{host}"}
            assert web.request("GET", "/api/info", headers={"Host": host, **origin})[0] == 200, host
        # The public URL grants no trust of its own (as in the official profile).
        for host in ("app.example", "dev.internal"):
            assert web.request("GET", "/api/info", headers={"Host": host})[0] == 403, host
    finally:
        proc.terminate()
        proc.wait(timeout=EXIT_TIMEOUT)


def test_oversized_bodies_and_unknown_methods_get_clear_errors(start_web):
    web = start_web()
    web.login()
    status, _, text = web.request("POST", "/api/rpc", "x" * (1024 * 1024 + 1))
    assert (status, text.decode()) == (413, "request body larger than 1048576 bytes")
    status, _, text = web.request("POST", "/api/rpc", "{not json")
    assert status == 400 and text.decode().startswith("the request body is not what this endpoint takes")
    assert web.rpc("shutdown", {}) == {"error": {"message": "shutdown is not available to the page"}}
    status, _, text = web.request("POST", "/api/approval", json.dumps({"id": 99, "decision": "allow-once"}))
    assert (status, text.decode()) == (404, "no approval with that id is waiting")
    assert web.rpc("session/events", {"sessionId": "nope"})["error"]["message"] == 'session "nope" not found'


# ---------------------------------------------------------------------------
# The SDK protocol through the page's API
# ---------------------------------------------------------------------------


def test_a_prompt_streams_over_the_live_channel_and_is_in_the_log(start_web, scenario):
    web = start_web("--model", scenario([{"text": "Hello from the page"}]))
    web.login()
    live = Live(web)
    receipt = web.result("session/prompt", {"sessionId": "web-1",
                                            "contentBlocks": [{"type": "text", "text": "hi"}]})
    assert receipt["messageId"]
    event = live.event("web-1", "assistant/message")
    assert event["data"]["message"]["content"][0]["text"] == "Hello from the page"
    live.wait(lambda e, d: e == "notification" and d["method"] == "session.delta"
              and d["params"]["kind"] == "text", "a text delta")
    live.idle("web-1")
    page = web.result("session/events", {"sessionId": "web-1"})
    assert "assistant/message" in [e["type"] for e in page["events"]]
    listed = web.result("session/list", {})["sessions"]
    assert [s["sessionId"] for s in listed] == ["web-1"]
    live.close()


@pytest.mark.parametrize("decision", ["allow-once", "reject"])
def test_an_approval_is_answered_from_the_page(start_web, scenario, workspace, decision):
    web = start_web("--model", scenario([bash("touch approved.txt", escalate=True), {"text": "done"}]))
    web.login()
    live = Live(web)
    web.result("session/prompt", {"sessionId": "web-ask", "contentBlocks": [{"type": "text", "text": "go"}]})
    _, asked = live.wait(lambda e, d: e == "approval", "an approval")
    assert asked["params"]["toolName"] == "bash" and asked["params"]["options"] == [
        "allow-once", "allow-session", "reject"]
    status, _, _ = web.request("POST", "/api/approval", json.dumps({"id": asked["id"], "decision": decision}),
                               {"Origin": web.root.rstrip("/")})
    assert status == 200
    live.wait(lambda e, d: e == "approval-settled" and d["id"] == asked["id"], "the approval settled")
    live.idle("web-ask")
    assert (workspace / "approved.txt").exists() == (decision == "allow-once")
    live.close()


def test_cancel_stops_a_running_bash_from_the_page(start_web, scenario, workspace):
    web = start_web("--model", scenario([bash("sleep 30; touch late.txt"), {"text": "never"}, {"text": "after"}]))
    web.login()
    live = Live(web)
    web.result("session/prompt", {"sessionId": "web-cancel", "contentBlocks": [{"type": "text", "text": "go"}]})
    live.event("web-cancel", "tool/call")
    cancelled = web.result("session/cancel", {"sessionId": "web-cancel", "dropQueued": True})
    assert cancelled["turn"] == 1
    end = live.event("web-cancel", "turn/end")
    assert end["data"]["reason"]["kind"] == "aborted"
    live.idle("web-cancel")
    assert not (workspace / "late.txt").exists()
    live.close()


def test_a_reloaded_page_catches_up_with_nothing_missing(start_web, scenario):
    web = start_web("--model", scenario([{"text": "first"}, {"text": "second"}]))
    web.login()
    live = Live(web)
    web.result("session/prompt", {"sessionId": "web-r", "contentBlocks": [{"type": "text", "text": "1"}]})
    live.idle("web-r")
    live.close()
    # A new page: live channel first, then the history; merged by seq.
    again = Live(web)
    web.result("session/prompt", {"sessionId": "web-r", "contentBlocks": [{"type": "text", "text": "2"}]})
    again.idle("web-r")
    page = web.result("session/events", {"sessionId": "web-r"})
    seqs = [e["seq"] for e in page["events"]]
    live_seqs = [d["params"]["event"]["seq"] for e, d in again.seen
                 if e == "notification" and d["method"] == "session.event"]
    merged = sorted(set(seqs) | set(live_seqs))
    assert merged == list(range(merged[0], merged[-1] + 1)) and merged[0] == 0
    again.close()


def test_sigterm_closes_every_session_and_they_resume_elsewhere(start_web, scenario, make_raw, workspace):
    web = start_web("--model", scenario([{"text": "kept"}]))
    web.login()
    live = Live(web)
    web.result("session/prompt", {"sessionId": "web-kept", "contentBlocks": [{"type": "text", "text": "hi"}]})
    live.idle("web-kept")
    web.proc.terminate()
    assert web.proc.wait(timeout=EXIT_TIMEOUT) == 0
    live.close()
    # The lock is released and the log complete: the SDK profile resumes it.
    raw = make_raw()
    raw.initialize(workspace)
    raw.result("session/resume", {"sessionId": "web-kept"})
    page = raw.result("session/events", {"sessionId": "web-kept"})
    assert [e for e in page["events"] if e["type"] == "turn/end"][0]["data"]["reason"] == {"kind": "completed"}


# ---------------------------------------------------------------------------
# TLS from PEM files
# ---------------------------------------------------------------------------


@pytest.fixture
def certificate(base_dir) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and its key (openssl)."""
    cert, key = base_dir / "cert.pem", base_dir / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=FRAME_TIMEOUT)
    return cert, key


def test_tls_serves_https_with_a_secure_cookie(dsh_home, home, workspace, certificate):
    import ssl

    cert, key = certificate
    proc = subprocess.Popen([str(dsh_bin_path()), "web", "--no-open", "--port", "0", "--provider", "scripted",
                             "--tls-cert", str(cert), "--tls-key", str(key)], cwd=workspace,
                            env=clean_env(dsh_home, home), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline().strip()
        match = re.match(r"^dsh web: https://127\.0\.0\.1:(\d+)/\?token=([A-Za-z0-9_-]{43})$", line)
        assert match, line + proc.stderr.read()
        port, token = int(match.group(1)), match.group(2)
        context = ssl.create_default_context(cafile=str(cert))
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=FRAME_TIMEOUT)
        conn.request("GET", f"/?token={token}")
        response = conn.getresponse()
        response.read()
        assert response.status == 303
        cookie = response.getheader("set-cookie")
        assert cookie.endswith("; HttpOnly; SameSite=Strict; Secure"), cookie
        conn.request("GET", "/api/info", headers={"Cookie": cookie.split(";")[0]})
        info = conn.getresponse()
        assert info.status == 200 and json.loads(info.read())["provider"] == "scripted"
        conn.close()
        # Plain HTTP to the TLS port gets no page.
        plain = http.client.HTTPConnection("127.0.0.1", port, timeout=FRAME_TIMEOUT)
        with pytest.raises((http.client.HTTPException, OSError)):
            plain.request("GET", "/")
            plain.getresponse().read()
    finally:
        proc.terminate()
        proc.wait(timeout=EXIT_TIMEOUT)


def test_unusable_tls_files_stop_the_launch(start_web, base_dir, certificate):
    cert, key = certificate
    code, _, err = start_web("--tls-cert", str(cert), expect_exit=True)
    assert code != 0 and "--tls-key" in err
    garbage = base_dir / "garbage.pem"
    garbage.write_text("not a certificate\n")
    code, _, err = start_web("--tls-cert", str(garbage), "--tls-key", str(key), expect_exit=True)
    assert code == 1 and err.strip() == f"dsh web: {garbage}: holds no PEM certificate"
    code, _, err = start_web("--tls-cert", str(cert), "--tls-key", str(garbage), expect_exit=True)
    assert code == 1 and err.startswith(f"dsh web: {garbage}: no unencrypted PEM private key")


# ---------------------------------------------------------------------------
# The live channel as a WebSocket (what the page uses)
# ---------------------------------------------------------------------------


def upgrade(web: Web, origin: str | None, cookie: bool = True) -> tuple[str, socket.socket]:
    """A raw WebSocket handshake on /api/live: the response head and the socket."""
    sock = socket.create_connection((web.host, web.port), timeout=FRAME_TIMEOUT)
    lines = [f"GET /api/live HTTP/1.1", f"Host: {web.authority}", "Upgrade: websocket", "Connection: Upgrade",
             "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version: 13"]
    if origin:
        lines.append(f"Origin: {origin}")
    if cookie and web.cookie:
        lines.append(f"Cookie: {web.cookie}")
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = sock.recv(4096)
        if not chunk:
            break
        head += chunk
    return head.decode(errors="replace"), sock


def test_cross_origin_websocket_upgrades_are_refused(start_web):
    web = start_web()
    web.login()
    head, sock = upgrade(web, "http://evil.example")
    sock.close()
    assert head.startswith("HTTP/1.1 403") and "cross-origin" in head, head
    head, sock = upgrade(web, web.root.rstrip("/"), cookie=False)
    sock.close()
    assert head.startswith("HTTP/1.1 401"), head
    head, sock = upgrade(web, web.root.rstrip("/"))
    sock.close()
    # RFC 6455's sample key and its accept value.
    assert head.startswith("HTTP/1.1 101") and "sec-websocket-accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=" in head, head


def test_an_oversized_websocket_message_closes_the_channel(start_web):
    web = start_web()
    web.login()
    head, sock = upgrade(web, web.root.rstrip("/"))
    assert head.startswith("HTTP/1.1 101"), head
    # One masked text frame of 70000 bytes (over the 64 KiB bound).
    payload = b"x" * 70_000
    frame = bytes([0x81, 0x80 | 127]) + len(payload).to_bytes(8, "big") + b"\0\0\0\0" + payload
    sock.sendall(frame)
    sock.settimeout(FRAME_TIMEOUT)
    received = b""
    with contextlib.suppress(OSError):
        while chunk := sock.recv(65536):
            received += chunk
    sock.close()
    # The server closes the connection (a close frame, 1009 "message too big", then EOF).
    assert received == b"" or received[0] == 0x88, received[:20]
