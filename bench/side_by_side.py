"""Side-by-side bench: dsh-rs against the official runtime.

Measures, for each runtime binary: time from spawn to the `initialize`
response, resident memory after `initialize` and its peak after N turns,
and the wall time of a plain text turn (prompt sent -> `idle`), driven over
raw stdio (no SDK overhead). Both runtimes use the `deepseek-official`
provider against the same minimal Messages-API SSE server on 127.0.0.1.

Usage: python bench/side_by_side.py --dsh target/release/dsh [--official PATH] [--turns 50]
"""

import argparse
import http.server
import json
import os
import statistics
import subprocess
import tempfile
import threading
import time


class FakeMessages(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        if not self.path.endswith("/messages"):
            self.send_response(404)
            self.end_headers()
            return
        events = [
            ("message_start", {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "model": "x", "content": [], "usage": {"input_tokens": 10, "output_tokens": 0}}}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "pong"}}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        body = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def rss_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def tree_rss_kib(pid, field):
    total = rss_kib(pid, field)
    try:
        children = open(f"/proc/{pid}/task/{pid}/children").read().split()
    except OSError:
        children = []
    return total + sum(tree_rss_kib(int(c), field) for c in children)


class Raw:
    def __init__(self, exe, env, cwd):
        self.proc = subprocess.Popen([os.path.abspath(exe), "--profile", "sdk"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env=env, cwd=cwd, text=True, bufsize=1)
        self.n = 0

    def send(self, method, params):
        self.n += 1
        frame = {"jsonrpc": "2.0", "id": str(self.n), "method": method}
        if params is not None:
            frame["params"] = params
        self.proc.stdin.write(json.dumps(frame) + "\n")
        self.proc.stdin.flush()
        return str(self.n)

    def until(self, predicate):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("runtime closed stdout")
            frame = json.loads(line)
            if predicate(frame):
                return frame


def bench(name, exe, provider, model, turns, port):
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, DSH_HOME=os.path.join(tmp, "home"), DEEPSEEK_API_KEY="sk-bench",
                   DEEPSEEK_BASE_URL=f"http://127.0.0.1:{port}", HOME=tmp)
        start = time.perf_counter()
        rt = Raw(exe, env, tmp)
        rid = rt.send("initialize", {"cwd": tmp, "provider": provider, "model": model})
        rt.until(lambda f: f.get("id") == rid)
        init_ms = (time.perf_counter() - start) * 1000
        rss_init = tree_rss_kib(rt.proc.pid, "VmRSS")
        walls = []
        for i in range(turns):
            t0 = time.perf_counter()
            rt.send("session/prompt", {"sessionId": "bench", "contentBlocks": [{"type": "text", "text": f"ping {i}"}]})
            rt.until(lambda f: f.get("method") == "session.status" and f["params"]["status"] == "idle")
            walls.append((time.perf_counter() - t0) * 1000)
        rss_peak = tree_rss_kib(rt.proc.pid, "VmHWM")
        rid = rt.send("shutdown", None)
        rt.until(lambda f: f.get("id") == rid)
        rt.proc.wait(timeout=10)
    return {
        "runtime": name,
        "initialize_ms": round(init_ms, 1),
        "rss_after_initialize_mib": round(rss_init / 1024, 1),
        "peak_rss_mib": round(rss_peak / 1024, 1),
        "first_turn_ms": round(walls[0], 2),
        "median_turn_ms": round(statistics.median(walls[1:] or walls), 2),
        "turns": turns,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsh", required=True)
    parser.add_argument("--official")
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    rows = [bench("dsh-rs", args.dsh, "deepseek-official", "deepseek-v4-flash", args.turns, port)]
    if args.official:
        rows.append(bench("official 0.2.1rc2", args.official, "deepseek-official", "deepseek-v4-flash", args.turns, port))
    server.shutdown()
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")


if __name__ == "__main__":
    main()
