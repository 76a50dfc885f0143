"""Side-by-side ACP bench: `dsh acp` against the official runtime's `acp` profile.

Measures, for each runtime binary and each of N runs (a fresh process, a
fresh temporary `DSH_HOME` and workspace per run), driven over raw stdio
(ACP frames, no SDK overhead):

* spawn -> the `initialize` response read;
* spawn -> the `session/new` response read (`cwd` = the run's workspace,
  sent as soon as `initialize` is answered);
* the resident memory after `session/new`: VmRSS summed over the runtime's
  process tree (the runtime and every descendant, with the number of
  processes in it);
* stdin closed -> the process exited (bounded: killed after 10 s, counted
  in the `exits` column).

`HOME` is one directory per runtime, kept across its runs: the official
runtime unpacks ~85 MB into it (`~/.cache/pkg`, during its first
`session/new`), so every runtime first
does one warm-up run, reported apart (`first run`) and left out of the
medians. Both runtimes get `DEEPSEEK_API_KEY=sk-bench` and a
`DEEPSEEK_BASE_URL` pointing at side_by_side.py's minimal Messages-API
server on 127.0.0.1 (no prompt is sent, so it is never asked anything).

Usage: python bench/acp_side_by_side.py --dsh target/release/dsh [--official PATH] [--runs 20]
"""

import argparse
import http.server
import json
import os
import queue
import signal
import statistics
import subprocess
import tempfile
import threading
import time

from side_by_side import FakeMessages

# Bounds so that a hung runtime fails the bench instead of stalling it.
ANSWER_TIMEOUT_S = 120  # the official runtime's first run unpacks into HOME
EXIT_TIMEOUT_S = 10


def status_field_kib(pid, field):
    """A `kB` field of /proc/<pid>/status, 0 when the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def descendants(pid):
    """Every live descendant of `pid`, from the children of all its threads."""
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        try:
            tasks = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue
        for tid in tasks:
            try:
                with open(f"/proc/{parent}/task/{tid}/children") as f:
                    children = [int(c) for c in f.read().split()]
            except OSError:
                continue
            found.extend(children)
            todo.extend(children)
    return found


def tree_rss_kib(pid):
    """VmRSS of `pid` and its descendants, summed; and how many processes that is."""
    pids = [pid, *descendants(pid)]
    return sum(status_field_kib(p, "VmRSS") for p in pids), len(pids)


class AcpProcess:
    """A runtime serving ACP on stdio, its frames read by a thread."""

    def __init__(self, argv, env, cwd, stderr):
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
                                     env=env, cwd=cwd, text=True, bufsize=1, start_new_session=True)
        self.frames = queue.Queue()
        self.n = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.proc.stdout:
            self.frames.put(line)
        self.frames.put(None)

    def request(self, method, params):
        """Sends a request; returns its response (a notification or agent request in between is skipped)."""
        self.n += 1
        rid = self.n
        self.proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while True:
            try:
                line = self.frames.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"no answer to {method} within {ANSWER_TIMEOUT_S} s") from None
            if line is None:
                raise RuntimeError(f"the runtime closed stdout before answering {method}")
            frame = json.loads(line)
            if frame.get("id") == rid and "method" not in frame:
                if "result" not in frame:
                    raise RuntimeError(f"{method} failed: {line.strip()}")
                return frame["result"]

    def close(self):
        """Closes stdin and waits for the exit; kills the process group after EXIT_TIMEOUT_S.

        Returns the time to exit in ms and whether the runtime exited by itself.
        """
        t0 = time.perf_counter()
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=EXIT_TIMEOUT_S)
            clean = True
        except subprocess.TimeoutExpired:
            clean = False
        exit_ms = (time.perf_counter() - t0) * 1000
        try:  # anything it left behind in its own process group
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        return exit_ms, clean


def one_run(argv, home, port):
    """One spawn: the timings, the tree's RSS after session/new, the exit."""
    with tempfile.TemporaryDirectory(prefix="acp-bench-") as tmp:
        workspace = os.path.join(tmp, "workspace")
        os.mkdir(workspace)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": os.environ.get("LANG", "C.UTF-8"),
               "HOME": home, "DSH_HOME": os.path.join(tmp, "dsh_home"), "DEEPSEEK_API_KEY": "sk-bench",
               "DEEPSEEK_BASE_URL": f"http://127.0.0.1:{port}"}
        with open(os.path.join(tmp, "stderr.log"), "w") as stderr:
            start = time.perf_counter()
            rt = AcpProcess(argv, env, workspace, stderr)
            try:
                rt.request("initialize", {"protocolVersion": 1, "clientCapabilities": {
                    "fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}})
                init_ms = (time.perf_counter() - start) * 1000
                result = rt.request("session/new", {"cwd": workspace, "mcpServers": []})
                new_ms = (time.perf_counter() - start) * 1000
                if not result.get("sessionId"):
                    raise RuntimeError(f"session/new answered no sessionId: {result}")
                rss, procs = tree_rss_kib(rt.proc.pid)
            except Exception as e:
                rt.close()
                with open(os.path.join(tmp, "stderr.log")) as log:
                    tail = log.read()[-2000:]
                raise RuntimeError(f"{' '.join(argv)}: {e}\nstderr:\n{tail}") from e
            exit_ms, clean = rt.close()
    return {"init": init_ms, "new": new_ms, "rss": rss / 1024, "procs": procs, "exit": exit_ms, "clean": clean}


def spread(values, digits=1):
    """`median (min–max)`."""
    fmt = f"{{:.{digits}f}}"
    return f"{fmt.format(statistics.median(values))} ({fmt.format(min(values))}–{fmt.format(max(values))})"


def bench(name, argv, runs, port):
    version = subprocess.run([argv[0], "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="acp-bench-home-") as home:
        first = one_run(argv, home, port)
        samples = [one_run(argv, home, port) for _ in range(runs)]
    return {
        "runtime": f"{name} ({version})" if version else name,
        "runs": runs,
        "initialize answered, ms": spread([s["init"] for s in samples]),
        "session/new answered, ms": spread([s["new"] for s in samples]),
        "RSS after session/new, MiB": spread([s["rss"] for s in samples]),
        "processes": "–".join(sorted({str(s["procs"]) for s in samples}, key=int)),
        "stdin closed → exit, ms": spread([s["exit"] for s in samples]),
        "exits": f"{sum(s['clean'] for s in samples)}/{runs}",
        "first run (excluded): init / session/new, ms": f"{first['init']:.0f} / {first['new']:.0f}",
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsh", required=True, help="a dsh binary, run as `<path> acp`")
    parser.add_argument("--official", help="the official runtime executable, run as `<path> --profile acp`")
    parser.add_argument("--runs", type=int, default=20, help="measured runs per runtime (after one warm-up run)")
    args = parser.parse_args()
    if args.runs < 1:
        parser.error("--runs must be at least 1")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), FakeMessages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    rows = [bench("dsh acp", [os.path.abspath(args.dsh), "acp"], args.runs, port)]
    if args.official:
        rows.append(bench("official --profile acp", [os.path.abspath(args.official), "--profile", "acp"],
                          args.runs, port))
    server.shutdown()
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")
    print()
    print(f"Median (min–max) over {args.runs} runs per runtime; times from spawn. Each runtime's first run "
          "(HOME not yet populated: the official runtime unpacks itself there) is a warm-up, excluded; "
          "its figures are in the last column. RSS is VmRSS summed over the process tree.")


if __name__ == "__main__":
    main()
