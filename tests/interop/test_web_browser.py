"""`dsh web` in a real browser (issue 32): Debian's Chromium driven by
Playwright (the Python package, pointed at the system browser), against the
real binary and the fake DeepSeek server (crates/dsh-fake-model). What the browser shows is
checked against what happened: the cookie the browser holds, the files a
tool wrote, the processes a cancel killed.

The browser is `$CHROMIUM_BIN`, else `chromium` on the PATH; without one
the tests are skipped, except under CI (the test command installs it).
`UPDATE_WEB_SCREENSHOT=1` writes the page's screenshot to
docs/images/dsh-web.png (the one the README shows).

Run:  cd /work/main && DSH_BIN=$PWD/target/debug/dsh \\
        target/venv/bin/python -m pytest tests/interop/test_web_browser.py -q -p no:cacheprovider
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from interop_support import (
    EXIT_TIMEOUT,
    REPO_ROOT,
    FakeModel,
    clean_env,
    dsh_bin_path,
    with_marker,
    write_scenario,
)

UI_TIMEOUT_MS = 20_000


def chromium() -> str | None:
    return os.environ.get("CHROMIUM_BIN") or shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="module")
def browser():
    path = chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        path = None
    if path is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests: install Debian's chromium and the playwright package")
        pytest.skip("no chromium or no playwright package: the browser tests need both")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield launched
        launched.close()


class Served:
    """A running `dsh web` and a browser page on it."""

    def __init__(self, proc: subprocess.Popen, url: str, page, errors: list[str]) -> None:
        self.proc = proc
        self.url = url
        self.page = page
        self.errors = errors

    def testid(self, name: str, extra: str = ""):
        return self.page.locator(f"[data-testid={name}]{extra}")

    def send(self, text: str) -> None:
        self.testid("prompt-input").fill(text)
        self.testid("send").click()


@pytest.fixture
def serve(browser, dsh_home, home, workspace, base_dir):
    """serve(replies, agents=()) -> Served: `dsh web` on a fake DeepSeek server playing `replies`, a fresh
    browser context opened on its URL."""
    started: list[tuple[subprocess.Popen, object]] = []
    servers: list[FakeModel] = []

    def start(replies: list[dict], agents: list[dict] = (), scripted: bool = False) -> Served:
        if scripted:
            # The offline model in process: `dsh web --model <scenario>`.
            env = clean_env(dsh_home, home)
            route = ["--model", write_scenario(base_dir, replies, agents=agents)]
        else:
            # The fake DeepSeek server plays the replies over HTTP, as a
            # real provider streams.
            server = FakeModel(base_dir / f"fake-{len(started)}", replies, agents)
            servers.append(server)
            env = clean_env(dsh_home, home, DEEPSEEK_BASE_URL=server.base_url, DEEPSEEK_API_KEY="sk-web-test")
            route = ["--provider", "deepseek-official", "--model", "deepseek-v4-flash"]
        proc = subprocess.Popen([str(dsh_bin_path()), "web", "--no-open", "--port", "0", *route],
                                cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = proc.stdout.readline().strip()
        assert line.startswith("dsh web: http://127.0.0.1:"), proc.stderr.read()
        context = browser.new_context()
        started.append((proc, context))
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        url = line.split(" ", 2)[2]
        page.goto(url)
        page.locator("[data-testid=prompt-input]").wait_for()
        return Served(proc, url, page, errors)

    yield start
    for proc, context in started:
        context.close()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for server in servers:
        server.close()


def expect(locator):
    from playwright.sync_api import expect as playwright_expect
    return playwright_expect(locator)


def bash(command: str, call_id: str = "toolu_1", escalate: bool = False) -> dict:
    arguments = {"description": "Run a command", "command": command}
    if escalate:
        arguments |= {"sandbox_permissions": "danger-full-access", "justification": "The task needs it."}
    return {"blocks": [{"tool_call": {"id": call_id, "name": "bash", "arguments": arguments}}]}


def test_the_token_url_sets_the_cookie_and_the_page_loads_clean(serve):
    web = serve([{"text": "unused"}])
    [cookie] = web.page.context.cookies()
    assert cookie["name"].startswith("dsh-web-") and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert web.page.url.endswith("/") and "token=" not in web.page.url
    # Scripts cannot read the cookie.
    assert web.page.evaluate("document.cookie") == ""
    assert web.errors == []


@pytest.mark.parametrize("scripted", [True, False], ids=["scripted", "fake-deepseek"])
def test_a_new_session_streams_its_reply_into_the_page(serve, scripted):
    fragments = ["The ", "answer ", "arrives ", "piece ", "by ", "piece, ", "slowly ", "enough ", "to ", "be ",
                 "seen ", "streaming."]
    web = serve([{"text": fragments, "delta_gap_ms": 150}], scripted=scripted)
    web.send("Tell me slowly")
    # The pending bubble, once it shows some of the reply (it may be put up
    # an instant before its first text).
    pending = web.testid("message-assistant", "[data-pending=true]").filter(has_text=re.compile(r"\S"))
    pending.first.wait_for()
    streamed = pending.first.inner_text()
    assert streamed and streamed != "".join(fragments), "the reply was shown before it was complete"
    final = web.testid("message-assistant", ":not([data-pending])")
    final.filter(has_text="".join(fragments)).wait_for()
    assert web.testid("message-user").filter(has_text="Tell me slowly").count() == 1
    web.testid("status").filter(has_text="idle").wait_for()
    # The session is listed and found by search.
    item = web.testid("session-item")
    item.first.wait_for()
    web.testid("search").fill("no such session")
    # (No wait_for_function: the page's CSP refuses evaluated strings.)
    expect(item).to_have_count(0)
    web.testid("search").fill("")
    item.first.wait_for()
    assert web.errors == []


@pytest.mark.parametrize("answer", ["approve-once", "reject"])
def test_approving_and_rejecting_a_tool_call_moves_the_file_system(serve, workspace, answer):
    web = serve([bash("touch approved.txt", escalate=True), {"text": "finished"}])
    web.send("Create the file")
    card = web.testid("approval-card")
    card.wait_for()
    assert "danger-full-access" in card.inner_text()
    card.locator(f"[data-testid={answer}]").click()
    web.testid("message-assistant").filter(has_text="finished").wait_for()
    card.wait_for(state="detached")
    assert (workspace / "approved.txt").exists() == (answer == "approve-once")
    assert web.errors == []


def test_cancel_stops_a_running_bash(serve, workspace):
    marker = f"web-cancel-{os.getpid()}-{time.monotonic_ns()}"
    web = serve([bash(f"sleep 30 # {marker}\ntouch late.txt"), {"text": "never"}])
    web.send("Run the long command")
    web.testid("tool-call").first.wait_for()
    deadline = time.monotonic() + 10
    while not with_marker(marker):
        assert time.monotonic() < deadline, "the command did not start"
        time.sleep(0.05)
    web.testid("status").filter(has_text="running").wait_for()
    web.testid("cancel").click()
    web.testid("status").filter(has_text="idle").wait_for()
    deadline = time.monotonic() + 10
    while with_marker(marker):
        assert time.monotonic() < deadline, "the command outlived the cancel"
        time.sleep(0.05)
    assert not (workspace / "late.txt").exists()


def test_a_subagent_appears_in_the_tree_and_settles(serve):
    web = serve([{"blocks": [{"tool_call": {"id": "toolu_1", "name": "subagent", "arguments": {
        "description": "Count", "prompt": "TASK-COUNT: count to three"}}}]},
        {"text": "Delegated."}, {"text": "The child is done."}],
        agents=[{"when": "TASK-COUNT", "replies": [{"text": "one two three", "delay_ms": 1500}]}])
    web.send("Delegate the counting")
    child = web.testid("subagent-item")
    child.first.wait_for()
    web.testid("subagent-item", "[data-status=idle]").first.wait_for()
    web.testid("message-assistant").filter(has_text="The child is done.").wait_for()
    assert web.errors == []


def test_a_reload_mid_turn_loses_nothing(serve):
    fragments = [f"part{i} " for i in range(12)]
    web = serve([{"text": fragments, "delta_gap_ms": 250}])
    web.send("Stream for a while")
    web.testid("message-assistant", "[data-pending=true]").first.wait_for()
    web.page.reload()
    web.testid("message-assistant", ":not([data-pending])").filter(has_text="part11").wait_for()
    text = web.testid("message-assistant", ":not([data-pending])").first.inner_text()
    assert text.strip() == "".join(fragments).strip()
    assert web.testid("message-user").filter(has_text="Stream for a while").count() == 1
    assert web.errors == []


def test_the_page_screenshot(serve, workspace):
    (workspace / "notes.md").write_text("# Notes\nShip it.\n")
    web = serve([
        {"blocks": [{"text": "Let me look at the notes."},
                    {"tool_call": {"id": "toolu_1", "name": "read", "arguments": {"file_path": "notes.md"}}}]},
        {"blocks": [{"tool_call": {"id": "toolu_2", "name": "write", "arguments": {
            "file_path": "summary.md", "content": "# Summary\nShip it.\n"}}}]},
        {"text": "I wrote summary.md: the notes say to ship it."}])
    web.send("Summarise notes.md into summary.md")
    web.testid("message-assistant").filter(has_text="I wrote summary.md").wait_for()
    web.testid("session-item").first.wait_for()
    web.page.set_viewport_size({"width": 1280, "height": 800})
    update = os.environ.get("UPDATE_WEB_SCREENSHOT") == "1"
    target = REPO_ROOT / "docs" / "images" / "dsh-web.png" if update else workspace / "dsh-web.png"
    target.parent.mkdir(parents=True, exist_ok=True)
    web.page.screenshot(path=str(target))
    assert target.stat().st_size > 10_000
    assert (workspace / "summary.md").read_text() == "# Summary\nShip it.\n"


def test_jobs_turn_usage_and_the_exported_log(serve, tmp_path):
    web = serve([bash("echo hi"), {"text": "Done."}])
    web.send("Run it")
    web.testid("message-assistant").filter(has_text="Done.").wait_for()
    job = web.testid("jobs").locator("[data-testid=job-item]")
    expect(job).to_have_count(1)
    expect(job).to_have_attribute("data-status", "completed")
    assert "echo hi" in job.inner_text()
    end = web.testid("turn-end")
    expect(end).to_have_count(1)
    expect(end.locator("[data-testid=turn-usage]")).to_contain_text("tokens in")
    web.page.wait_for_url("**#session=*")
    session = web.page.url.split("#session=", 1)[1]
    # The log, exported from the keyboard: every event once, in seq order.
    web.testid("export").focus()
    with web.page.expect_download() as download:
        web.page.keyboard.press("Enter")
    assert download.value.suggested_filename == f"{session}.jsonl"
    saved = tmp_path / "log.jsonl"
    download.value.save_as(saved)
    events = [json.loads(line) for line in saved.read_text().splitlines()]
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(len(seqs)))
    assert {"job/registered", "turn/end"} <= {e["type"] for e in events}
    assert web.errors == []


def test_the_goal_panel_follows_the_goal(serve):
    web = serve([
        {"blocks": [{"tool_call": {"id": "g1", "name": "create_goal",
                                   "arguments": {"objective": "Ship the thing", "max_goal_rounds": 1}}}]},
        {"text": "t1"}, {"text": "r1"}, {"text": "r2"}])
    web.send("Start a goal")
    goal = web.testid("goal")
    expect(goal).to_contain_text("Ship the thing")
    expect(goal).to_have_attribute("data-status", "blocked", timeout=UI_TIMEOUT_MS)
    assert web.errors == []
