"""Big prompts and big replies through the release binary.

Two measurements, each on a fresh `dsh --profile sdk` with a temporary
DSH_HOME and workspace, the offline `scripted` provider and raw JSON-RPC
lines on stdio (the client reads every frame, as the SDK does):

* ``prompt``: one turn whose prompt is one text block of ``--mib`` MiB
  (default 47.7, i.e. 50 000 000 bytes). Prints the runtime's peak resident
  size (VmHWM) and its ratio to the prompt. ``--reply short`` answers "ok"
  (the prompt's own cost); ``--reply echo`` answers with the prompt itself,
  which the official event format then carries three times in
  ``assistant/message`` (content, text deltas, block end).
* ``reply``: ``--sessions`` sessions (default 30), one turn each, whose model
  reply is ~1 MiB of word-like text (quotes, backslashes, tabs, newlines and
  non-ASCII included, so that escaping and compression do real work).
  Prints the runtime's CPU time per MiB of reply (all threads, from
  /proc/<pid>/task/*/schedstat; median and minimum over the turns after the
  first) and the end-to-end rate at which replies reach the client.

Usage: python bench/big_payloads.py --dsh target/release/dsh prompt [--mib 47.7] [--reply short|echo]
       python bench/big_payloads.py --dsh target/release/dsh reply [--sessions 30]
"""

import argparse
import glob
import json
import os
import random
import subprocess
import tempfile
import time


class Runtime:
    def __init__(self, dsh, model, profile="sdk"):
        self.dir = tempfile.TemporaryDirectory(prefix="dsh-bench-")
        home = os.path.join(self.dir.name, "home")
        self.ws = os.path.join(self.dir.name, "ws")
        os.makedirs(self.ws)
        self.proc = subprocess.Popen(
            [dsh, "--profile", profile],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "DSH_HOME": home},
            cwd=self.ws,
        )
        self.request(1, "initialize", {"provider": "scripted", "model": model, "cwd": self.ws})

    def send(self, frame):
        self.proc.stdin.write((json.dumps(frame) + "\n").encode())
        self.proc.stdin.flush()

    def until(self, done):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise SystemExit("the runtime closed its output")
            frame = json.loads(line)
            if done(frame):
                return frame

    def request(self, rid, method, params):
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return self.until(lambda f: f.get("id") == rid)

    def turn(self, session, text, on_frame=lambda f: None):
        self.send({"jsonrpc": "2.0", "id": f"p-{session}", "method": "session/prompt",
                   "params": {"sessionId": session, "contentBlocks": [{"type": "text", "text": text}]}})

        def idle(frame):
            on_frame(frame)
            return frame.get("method") == "session.status" and frame["params"]["status"] == "idle"

        self.until(idle)

    def status_kib(self, field):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return 0

    def cpu_ns(self):
        total = 0
        for path in glob.glob(f"/proc/{self.proc.pid}/task/*/schedstat"):
            try:
                with open(path) as f:
                    total += int(f.read().split()[0])
            except OSError:
                pass
        return total

    def close(self):
        self.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
        self.proc.wait(timeout=60)
        self.dir.cleanup()


def scenario(directory, reply_text):
    path = os.path.join(directory, "reply.yaml")
    with open(path, "w") as f:
        f.write("replies:\n  - text: " + json.dumps(reply_text) + "\n")
    return path


def prompt(args):
    size = int(args.mib * (1 << 20))
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
        model = "echo" if args.reply == "echo" else scenario(tmp, "ok")
        rt = Runtime(args.dsh, model)
        start = time.perf_counter()
        rt.turn("big", "x" * size)
        elapsed = time.perf_counter() - start
        peak = rt.status_kib("VmHWM")
        rt.close()
    print(f"prompt {size / (1 << 20):.1f} MiB, reply {args.reply}: peak {peak / 1024:.0f} MiB "
          f"({peak * 1024 / size:.2f}x the prompt), turn {elapsed:.2f} s end to end")


def words(n_bytes, seed=7):
    rng = random.Random(seed)
    vocabulary = ("the quick brown fox jumps over lazy dog runtime session event log frame "
                  "reply model tool agent 数据 résumé naïve \"quoted\" back\\slash tab\tnew\nline").split(" ")
    out, size = [], 0
    while size < n_bytes:
        word = rng.choice(vocabulary)
        out.append(word)
        size += len(word.encode()) + 1
    return " ".join(out)


def reply(args):
    with tempfile.TemporaryDirectory(prefix="dsh-bench-") as tmp:
        text = words(1 << 20)
        mib = len(text.encode()) / (1 << 20)
        rt = Runtime(args.dsh, scenario(tmp, text))
        cpu, wall = [], []
        for i in range(args.sessions):
            c0, t0 = rt.cpu_ns(), time.perf_counter()
            rt.turn(f"s{i}", "go")
            cpu.append((rt.cpu_ns() - c0) / 1e6 / mib)
            wall.append(time.perf_counter() - t0)
        rt.close()
    steady_cpu, steady_wall = sorted(cpu[1:]), sorted(wall[1:])
    median = steady_cpu[len(steady_cpu) // 2]
    print(f"reply {mib:.2f} MiB x {args.sessions}: runtime CPU per MiB median {median:.1f} ms, "
          f"min {steady_cpu[0]:.1f} ms; end to end {mib / steady_wall[len(steady_wall) // 2]:.1f} MiB/s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsh", required=True)
    sub = parser.add_subparsers(dest="what", required=True)
    p = sub.add_parser("prompt")
    p.add_argument("--mib", type=float, default=50_000_000 / (1 << 20))
    p.add_argument("--reply", choices=["short", "echo"], default="short")
    r = sub.add_parser("reply")
    r.add_argument("--sessions", type=int, default=30)
    args = parser.parse_args()
    prompt(args) if args.what == "prompt" else reply(args)


if __name__ == "__main__":
    main()
