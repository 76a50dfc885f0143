"""Fixtures for the dsh-rs interop tests (binary path, temp dirs, clients)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from deepseek_harness import DeepSeekHarness, HarnessClient, HarnessConfig

from interop_support import FRAME_TIMEOUT, RawClient, dsh_bin_path, transcripts_dir, write_scenario


# What the official runtime's bubblewrap sandbox (workspace-write) mounts
# anew: `--dev /dev` and `--tmpfs /tmp` over `--ro-bind / /`, the workspace
# bound back. A workflow's children are the runtime's own executable run in
# that sandbox, so an official runtime installed under one of these cannot
# start them ("bwrap: execvp …: No such file or directory").
OFFICIAL_SANDBOX_HIDES = (Path("/tmp"), Path("/dev"))


def hidden_from_the_official_sandbox(path: Path) -> bool:
    """Whether the official runtime's sandbox hides ``path``."""
    resolved = Path(path).resolve()
    return any(resolved == hidden or hidden in resolved.parents for hidden in OFFICIAL_SANDBOX_HIDES)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failure about the sandbox in a test run with an official runtime its
    sandbox cannot reach says why, and how to put the runtime elsewhere."""
    report = yield
    oracle = getattr(item, "funcargs", {}).get("official_bin")
    if (report.failed and oracle is not None and hidden_from_the_official_sandbox(oracle)
            and "sandbox" in report.longreprtext):
        report.sections.append(("the official runtime is out of its own sandbox's reach", (
            f"The official runtime is {oracle}, under {' or '.join(map(str, OFFICIAL_SANDBOX_HIDES))}: its "
            "bubblewrap sandbox mounts an empty /tmp and a fresh /dev, then execs that file for a workflow's "
            "children, which fails (bwrap: execvp ...: No such file or directory). scripts/test.sh keeps the "
            "venv of a checkout under /tmp in ~/.cache/dsh-test (or /var/tmp/dsh-test-<uid>); or set "
            "DSH_OFFICIAL_BIN to a copy of the runtime/ directory outside /tmp and /dev.")))
    return report


@pytest.fixture(autouse=True)
def _hermetic_environment(monkeypatch, tmp_path):
    """No inherited DSH_*/DEEPSEEK_* knobs; HOME points at an empty temp dir."""
    for key in list(os.environ):
        if key.startswith("DSH_") and key not in ("DSH_BIN", "DSH_FAKE_MODEL", "DSH_TRANSCRIPTS"):
            monkeypatch.delenv(key)
        elif key.startswith("DEEPSEEK_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))


@pytest.fixture(scope="session")
def dsh_bin() -> Path:
    path = dsh_bin_path()
    if not path.is_file() or not os.access(path, os.X_OK):
        pytest.fail(f"dsh binary not found or not executable at {path} (build it, or set DSH_BIN)")
    return path


@pytest.fixture(scope="session")
def transcripts() -> Path:
    path = transcripts_dir()
    if not (path / "plain_text" / "result.json").is_file():
        pytest.fail(f"official transcripts not found at {path} (set DSH_TRANSCRIPTS)")
    return path


@pytest.fixture
def base_dir(tmp_path) -> Path:
    return tmp_path.resolve()


@pytest.fixture
def home(base_dir) -> Path:
    return base_dir / "home"


@pytest.fixture
def dsh_home(base_dir) -> Path:
    path = base_dir / "dsh_home"
    path.mkdir()
    return path


@pytest.fixture
def workspace(base_dir) -> Path:
    path = base_dir / "workspace"
    path.mkdir()
    return path


@pytest.fixture
def scenario(base_dir):
    """scenario([reply, ...]) -> absolute path of a scripted-provider scenario file."""
    directory = base_dir / "scenarios"
    directory.mkdir()

    def make(replies: list[dict], name: str | None = None) -> str:
        return write_scenario(directory, replies, name)

    return make


@pytest.fixture
def make_harness(dsh_bin, dsh_home, workspace):
    """make_harness(model="echo", profile="sdk", **options) -> DeepSeekHarness (closed at teardown)."""
    harnesses: list[DeepSeekHarness] = []

    def make(model: str = "echo", profile: str = "sdk", **options) -> DeepSeekHarness:
        options.setdefault("cwd", str(workspace))
        options.setdefault("dsh_home", str(dsh_home))
        options.setdefault("request_timeout_seconds", FRAME_TIMEOUT)
        harness = DeepSeekHarness(dsh_bin=str(dsh_bin), provider="scripted", model=model, profile=profile, **options)
        harnesses.append(harness)
        return harness

    yield make
    for harness in harnesses:
        harness.close()


@pytest.fixture
def harness(make_harness) -> DeepSeekHarness:
    """A started echo harness (sdk profile)."""
    h = make_harness()
    h.start()
    return h


@pytest.fixture
def make_client(dsh_bin, dsh_home, workspace):
    """make_client(**config) -> started HarnessClient (not initialized; closed at teardown)."""
    clients: list[HarnessClient] = []

    def make(**config) -> HarnessClient:
        config.setdefault("cwd", str(workspace))
        config.setdefault("dsh_home", str(dsh_home))
        config.setdefault("request_timeout_seconds", FRAME_TIMEOUT)
        client = HarnessClient(HarnessConfig(dsh_bin=str(dsh_bin), **config))
        clients.append(client)
        client.start()
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def make_raw(dsh_bin, dsh_home, workspace, home):
    """make_raw(profile="sdk", **kw) -> RawClient spawned in the workspace (killed at teardown)."""
    clients: list[RawClient] = []

    def make(profile: str = "sdk", **kw) -> RawClient:
        kw.setdefault("dsh_home", dsh_home)
        kw.setdefault("cwd", workspace)
        kw.setdefault("home", home)
        client = RawClient(dsh_bin, profile=profile, **kw)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.kill()


@pytest.fixture
def raw(make_raw) -> RawClient:
    """A raw client, not yet initialized."""
    return make_raw()


@pytest.fixture
def raw_echo(make_raw, workspace) -> RawClient:
    """A raw client initialized with provider scripted / model echo."""
    client = make_raw()
    client.initialize(workspace)
    return client


@pytest.fixture
def fake_model(base_dir):
    """Start fake model servers: fake_model(replies) -> FakeModel (closed after the test)."""
    from interop_support import FakeModel, fake_model_path

    if not fake_model_path().is_file():
        pytest.fail(f"dsh-fake-model not found at {fake_model_path()} (cargo build, or set DSH_FAKE_MODEL)")
    servers: list[FakeModel] = []

    def start(replies: list[dict], agents: list[dict] = (), search: list[dict] = ()) -> FakeModel:
        server = FakeModel(base_dir / f"fake-{len(servers)}", replies, agents, search)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()
