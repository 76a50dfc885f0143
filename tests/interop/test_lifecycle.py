"""Process lifecycle: close(), signals, DSH_HOME requirement."""

from __future__ import annotations

import signal
import subprocess
import time

import pytest
from deepseek_harness import DeepSeekHarness

from interop_support import EXIT_TIMEOUT, clean_env, compact, run_bounded


def test_close_is_prompt_and_exit_code_zero(harness):
    assert run_bounded(harness.start_session("session-close"), "hi").finish_reason == "completed"
    proc = harness.client._proc
    assert proc is not None and proc.poll() is None
    started = time.monotonic()
    harness.close()
    elapsed = time.monotonic() - started
    assert elapsed < 3.0, f"close() took {elapsed:.2f}s"
    assert proc.poll() == 0


def test_close_right_after_start(make_harness):
    harness = make_harness()
    harness.start()
    proc = harness.client._proc
    started = time.monotonic()
    harness.close()
    assert time.monotonic() - started < 3.0
    assert proc.poll() == 0


def test_close_while_turn_running(make_harness, scenario):
    harness = make_harness(model=scenario([{"text": "never delivered", "delay_ms": 30000}]))
    harness.start()
    proc = harness.client._proc
    harness.client.session_prompt("session-busy-close", [{"type": "text", "text": "hi"}])
    started = time.monotonic()
    harness.close()
    elapsed = time.monotonic() - started
    assert elapsed < 3.0, f"close() took {elapsed:.2f}s with a running turn"
    assert proc.poll() == 0


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_signal_exit_codes(raw_echo, sig, code):
    raw_echo.prompt("s-signal", "hi")
    raw_echo.status("s-signal", "idle")
    raw_echo.proc.send_signal(sig)
    assert raw_echo.wait_exit(timeout=EXIT_TIMEOUT) == code


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_signal_exit_codes_before_initialize(raw, sig, code):
    # a request round trip proves the runtime is up and reading
    assert raw.error("nope")["code"] == -32603
    raw.proc.send_signal(sig)
    assert raw.wait_exit(timeout=EXIT_TIMEOUT) == code


@pytest.mark.parametrize("sig,code", [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_signal_while_turn_running(make_raw, workspace, scenario, sig, code):
    raw = make_raw()
    raw.initialize(workspace, model=scenario([{"text": "slow", "delay_ms": 30000}]))
    raw.prompt("s-signal-busy", "hi")
    raw.proc.send_signal(sig)
    assert raw.wait_exit(timeout=8.0) == code


def spawn_without_dsh_home(dsh_bin, cwd, home, profile, dsh_home_value=None):
    env = clean_env(None, home)
    if dsh_home_value is not None:
        env["DSH_HOME"] = dsh_home_value
    init = compact({"jsonrpc": "2.0", "id": "1", "method": "initialize",
                    "params": {"cwd": str(cwd), "provider": "scripted", "model": "echo"}}) + "\n"
    return subprocess.run(
        [str(dsh_bin), "--profile", profile],
        input=init.encode(),
        capture_output=True,
        cwd=str(cwd),
        env=env,
        timeout=20,
    )


def tree(path):
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


@pytest.mark.parametrize("profile", ["sdk", "sdk-minimal"])
@pytest.mark.parametrize("dsh_home_value", [None, "", "   "])
def test_refuses_to_start_without_dsh_home(dsh_bin, workspace, home, profile, dsh_home_value):
    done = spawn_without_dsh_home(dsh_bin, workspace, home, profile, dsh_home_value)
    assert done.returncode != 0
    assert done.stdout == b"", done.stdout[:500]
    stderr = done.stderr.decode("utf-8", "replace")
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert lines, "expected a clear message on stderr"
    assert "DSH_HOME" in stderr
    assert tree(home) == [], "nothing may be written under $HOME"
    assert tree(workspace) == [], "nothing may be written in the working directory"


def test_sdk_refuses_without_dsh_home_before_launch(dsh_bin, workspace, monkeypatch):
    monkeypatch.delenv("DSH_HOME", raising=False)
    harness = DeepSeekHarness(dsh_bin=str(dsh_bin), cwd=str(workspace), provider="scripted", model="echo")
    with pytest.raises(ValueError):
        harness.start()
    assert harness.client._proc is None


def test_sdk_refuses_blank_dsh_home_before_launch(dsh_bin, workspace):
    harness = DeepSeekHarness(
        dsh_bin=str(dsh_bin), cwd=str(workspace), provider="scripted", model="echo", dsh_home="  "
    )
    with pytest.raises(ValueError):
        harness.start()
    assert harness.client._proc is None


def test_dsh_home_from_environment_is_used(dsh_bin, workspace, dsh_home, monkeypatch):
    monkeypatch.setenv("DSH_HOME", str(dsh_home))
    harness = DeepSeekHarness(dsh_bin=str(dsh_bin), cwd=str(workspace), provider="scripted", model="echo")
    try:
        assert run_bounded(harness.start_session("session-env-home"), "hi").final_response == "hi"
    finally:
        harness.close()
