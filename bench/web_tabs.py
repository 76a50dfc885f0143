"""`dsh web` with many tabs on a long session.

Builds one session of at least `--events` events (echo turns of the
offline `scripted` model, run through `dsh --profile sdk`), starts `dsh web`
on that `DSH_HOME`, and opens `--tabs` tabs of Debian's chromium (driven
by Playwright) on the session. Reports:

* the time from opening the first tab to its conversation shown whole
  (the last reply rendered);
* `dsh web`'s resident memory (VmRSS) before any tab and with every tab
  open and live;
* each tab's JavaScript heap (Chromium's `JSHeapUsedSize`) and DOM node
  count, median and largest.

Usage: python bench/web_tabs.py --dsh target/release/dsh [--events 10000] [--tabs 10]
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

from playwright.sync_api import expect, sync_playwright


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def build_session(dsh: str, home: str, workspace: str, events: int) -> tuple[str, int, int]:
    """Echo turns on one session until it holds `events` events; its id, events and turns."""
    env = {"PATH": os.environ["PATH"], "HOME": home, "DSH_HOME": os.path.join(home, "dsh")}
    proc = subprocess.Popen([dsh, "--profile", "sdk"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, cwd=workspace, env=env)
    next_id = 0

    def request(method: str, params: dict) -> dict:
        nonlocal next_id
        next_id += 1
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}) + "\n")
        proc.stdin.flush()
        while True:
            frame = json.loads(proc.stdout.readline())
            if frame.get("id") == next_id:
                return frame.get("result")

    request("initialize", {"cwd": workspace, "provider": "scripted", "model": "echo"})
    session, count, turn = "bench-long", 0, 0
    while count < events:
        turn += 1
        request("session/prompt", {"sessionId": session,
                                   "contentBlocks": [{"type": "text", "text": f"turn {turn}: " + "lorem " * 20}]})
        while True:
            frame = json.loads(proc.stdout.readline())
            params = frame.get("params", {})
            if frame.get("method") == "session.status" and params.get("status") == "idle":
                break
            if frame.get("method") == "session.event":
                count = params["event"]["seq"] + 1
    request("shutdown", {})
    proc.wait(timeout=30)
    return session, count, turn


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dsh", required=True)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--tabs", type=int, default=10)
    parser.add_argument("--chromium", default=shutil.which("chromium"))
    args = parser.parse_args()
    dsh = os.path.abspath(args.dsh)
    with tempfile.TemporaryDirectory() as tmp:
        home, workspace = os.path.join(tmp, "home"), os.path.join(tmp, "ws")
        os.makedirs(home)
        os.makedirs(workspace)
        started = time.monotonic()
        session, count, turns = build_session(dsh, home, workspace, args.events)
        print(f"session {session}: {count} events (built in {time.monotonic() - started:.1f} s)")
        env = {"PATH": os.environ["PATH"], "HOME": home, "DSH_HOME": os.path.join(home, "dsh")}
        web = subprocess.Popen([dsh, "web", "--no-open", "--port", "0", "--provider", "scripted"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=workspace, env=env)
        try:
            url = web.stdout.readline().split(" ", 2)[2].strip()
            idle_rss = rss_kib(web.pid)
            with sync_playwright() as playwright:
                # Every tab renders as a visible one would (no background
                # throttling of the pages opened behind the first).
                browser = playwright.chromium.launch(executable_path=args.chromium, args=[
                    "--no-sandbox", "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                    "--disable-backgrounding-occluded-windows"])
                context = browser.new_context()
                first = context.new_page()
                first.goto(url)
                base = first.url.split("#")[0]
                first_started = time.monotonic()
                first.goto(f"{base}#session={session}")
                first.reload()
                # Shown whole: every turn's reply is in the page.
                expect(first.locator("[data-testid=message-assistant]")).to_have_count(turns, timeout=120_000)
                loaded = time.monotonic() - first_started
                pages = [first]
                for tab in range(2, args.tabs + 1):
                    page = context.new_page()
                    page.goto(f"{base}#session={session}")
                    print(f"tab {tab} opened", flush=True)
                    expect(page.locator("[data-testid=message-assistant]")).to_have_count(turns, timeout=120_000)
                    pages.append(page)
                heaps, nodes = [], []
                for page in pages:
                    cdp = context.new_cdp_session(page)
                    cdp.send("Performance.enable")
                    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
                    heaps.append(metrics["JSHeapUsedSize"] / 2**20)
                    nodes.append(metrics["Nodes"])
                tabs_rss = rss_kib(web.pid)
                browser.close()
            print(f"first tab: conversation of {count} events shown in {loaded * 1000:.0f} ms")
            print(f"dsh web RSS: {idle_rss / 1024:.1f} MiB before any tab, {tabs_rss / 1024:.1f} MiB with "
                  f"{args.tabs} tabs open and live")
            print(f"per tab JS heap: median {statistics.median(heaps):.1f} MiB, largest {max(heaps):.1f} MiB; "
                  f"DOM nodes: median {statistics.median(nodes):.0f}, largest {max(nodes):.0f}")
        finally:
            web.terminate()
            web.wait(timeout=10)


if __name__ == "__main__":
    main()
