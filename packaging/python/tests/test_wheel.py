"""Checks of an installed dsh-rs wheel, run from the venv it was installed into
(scripts/test-wheel.sh): the package, its version and its executable are the
installed ones, not the source tree's or target/'s."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import dsh_rs
import pytest
from deepseek_harness import DeepSeekHarness

REPO_ROOT = Path(__file__).resolve().parents[3]
VENV_BIN = Path(sys.prefix) / "bin"


def crate_version() -> str:
    """The workspace version, which the dsh crate inherits."""
    with open(REPO_ROOT / "Cargo.toml", "rb") as manifest:
        return tomllib.load(manifest)["workspace"]["package"]["version"]


def test_the_package_is_the_installed_one():
    assert Path(dsh_rs.__file__).resolve().is_relative_to(Path(sys.prefix).resolve())


def test_version_is_the_crate_version():
    assert dsh_rs.__version__ == crate_version()


def test_binary_path_is_the_venv_executable_the_wheel_installed():
    assert dsh_rs.binary_path() == str(VENV_BIN / "dsh")
    recorded = next(entry for entry in metadata.files("dsh-rs") if entry.name == "dsh")
    assert Path(dsh_rs.binary_path()).stat().st_size == recorded.size


def test_dsh_version_runs_from_the_venv_bin():
    done = subprocess.run([VENV_BIN / "dsh", "--version"], capture_output=True, text=True, timeout=30, check=True)
    assert done.stdout == f"dsh {crate_version()}\n"


def test_the_sdk_drives_the_installed_binary(tmp_path):
    with DeepSeekHarness(
        dsh_bin=dsh_rs.binary_path(),
        dsh_home=str(tmp_path / "dsh-home"),
        cwd=str(tmp_path),
        provider="scripted",
        model="echo",
    ) as harness:
        assert harness.run("Say hi").final_response == "Say hi"


def test_binary_path_refuses_an_executable_another_package_replaced(monkeypatch, tmp_path):
    # deepseek-harness-runtime-bin installs a 256-byte `dsh` launcher of its
    # own into the same bin directory.
    launcher = tmp_path / "dsh"
    launcher.write_text("#!/bin/sh\n")
    launcher.chmod(0o755)
    recorded = next(entry for entry in metadata.files("dsh-rs") if entry.name == "dsh")

    class Replaced:
        name = "dsh"
        size = recorded.size

        def locate(self):
            return launcher

    monkeypatch.setattr(metadata, "files", lambda name: [Replaced()])
    with pytest.raises(RuntimeError, match="not the dsh-rs executable"):
        dsh_rs.binary_path()
