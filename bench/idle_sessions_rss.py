"""Memory of many open sessions: resident size of `dsh` after N sessions
with one turn each.

Starts `dsh --profile <profile>` (default `sdk`, which writes zstd logs) on
a temporary DSH_HOME and workspace, initializes the scripted echo model
(`provider: "scripted", model: "echo"`, no network), then over raw JSON-RPC
lines opens N sessions (default 1000), each with one echo turn, waiting for
each turn to end. The sessions stay open. Prints VmRSS and VmHWM from
/proc/<pid>/status after initialize and after the N sessions.

Usage: python bench/idle_sessions_rss.py --dsh target/release/dsh [--sessions 1000] [--profile sdk]
"""

import argparse
import json
import os
import subprocess
import tempfile
import time


def status_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Rpc:
    def __init__(self, proc):
        self.proc = proc
        self.next_id = 0

    def send(self, method, params):
        self.next_id += 1
        frame = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write((json.dumps(frame) + "\n").encode())
        self.proc.stdin.flush()
        return self.next_id

    def frames(self):
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("dsh closed stdout")
            yield json.loads(line)

    def call(self, method, params):
        request = self.send(method, params)
        for frame in self.frames():
            if frame.get("id") == request:
                if "error" in frame:
                    raise RuntimeError(f"{method}: {frame['error']}")
                return frame["result"]

    def turn(self, session):
        """One prompt; returns when the session is idle again."""
        request = self.send(
            "session/prompt",
            {"sessionId": session, "contentBlocks": [{"type": "text", "text": f"ping {session}"}]},
        )
        answered = idle = False
        for frame in self.frames():
            if frame.get("id") == request:
                if "error" in frame:
                    raise RuntimeError(f"prompt {session}: {frame['error']}")
                answered = True
            params = frame.get("params") or {}
            if (
                frame.get("method") == "session.status"
                and params.get("sessionId") == session
                and params.get("status") == "idle"
            ):
                idle = True
            if answered and idle:
                return


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsh", default="target/release/dsh")
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--profile", default="sdk")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="dsh-rss-") as tmp:
        home = os.path.join(tmp, "home")
        workspace = os.path.join(tmp, "ws")
        os.makedirs(workspace)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "DSH_HOME": home}
        proc = subprocess.Popen(
            [os.path.abspath(args.dsh), "--profile", args.profile],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=tmp,
            env=env,
        )
        rpc = Rpc(proc)
        try:
            rpc.call("initialize", {"cwd": workspace, "provider": "scripted", "model": "echo"})
            rss0, hwm0 = status_kib(proc.pid, "VmRSS"), status_kib(proc.pid, "VmHWM")
            start = time.monotonic()
            for i in range(args.sessions):
                rpc.turn(f"s-{i:05}")
            elapsed = time.monotonic() - start
            rss, hwm = status_kib(proc.pid, "VmRSS"), status_kib(proc.pid, "VmHWM")
            rpc.call("shutdown", {})
            proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    print(f"dsh --profile {args.profile}: {args.sessions} open sessions, one echo turn each ({elapsed:.1f} s)")
    print(f"  after initialize: VmRSS {rss0 / 1024:6.1f} MiB  VmHWM {hwm0 / 1024:6.1f} MiB")
    print(f"  after {args.sessions:>5} turns: VmRSS {rss / 1024:6.1f} MiB  VmHWM {hwm / 1024:6.1f} MiB")
    print(f"  per session:      {(rss - rss0) / max(args.sessions, 1):6.1f} KiB")


if __name__ == "__main__":
    main()
