#!/usr/bin/env bash
# Runs every check and test of dsh-rs: formatting, clippy, the Rust unit,
# property and black-box tests, and the interop tests in which the official
# Python SDK drives the built binary. Creates its own Python venv.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt"
cargo fmt --all -- --check
echo "== cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
# A test that cannot run here says so (dsh_repo_checks::skip): under CI it
# fails; elsewhere its reason is listed after the tests.
export DSH_TEST_SKIPS="$PWD/target/test-skips.txt"
mkdir -p target && rm -f "$DSH_TEST_SKIPS"
cargo test --workspace --locked
# The sandbox tests again at every Landlock level docs/tools-and-sandbox.md
# distinguishes, lowered by DSH_LANDLOCK_ABI_MAX (the run above is the
# kernel's own level): 6 scopes signals and abstract sockets; 5 and 4 use a
# PID namespace instead; 3 refuses DSH_SANDBOX_NETWORK=off; 2 and 1 refuse
# every command of a restricted mode; 0 is a kernel without Landlock. The
# test binaries are the ones just built.
echo "== sandbox tests at Landlock ABI 6..0 (kernel: $(uname -r))"
for abi in 6 5 4 3 2 1 0; do
  echo "-- DSH_LANDLOCK_ABI_MAX=$abi"
  DSH_LANDLOCK_ABI_MAX=$abi cargo test -q --locked -p dsh-tools --test tools -- sandbox:: shell::a_restricted_mode
  DSH_LANDLOCK_ABI_MAX=$abi cargo test -q --locked -p dsh --test redteam
done
if [ -s "$DSH_TEST_SKIPS" ]; then
  echo "!! tests skipped on this machine:" >&2
  sort -u "$DSH_TEST_SKIPS" >&2
fi

echo "== cargo install (as a user installs it; reuses the debug build)"
cargo install --quiet --path crates/dsh --locked --debug --root target/cargo-install --target-dir target
target/cargo-install/bin/dsh --version
target/cargo-install/bin/dsh headless --help | grep -q DSH_HOME

echo "== python interop (official deepseek-harness-sdk drives target/debug/dsh)"
venv="${DSH_TEST_VENV:-target/venv}"
# The official runtime (the differential tests' oracle) runs a workflow's
# children inside bubblewrap: `--ro-bind / /`, `--dev /dev`, `--tmpfs /tmp`
# (the workspace bound back), then it execs its own executable. From a venv
# under /tmp or /dev that exec fails ("bwrap: execvp …: No such file or
# directory"), so a checkout there keeps its venv in a cache outside them,
# and DSH_OFFICIAL_BIN carries that oracle into scripts/test-wheel.sh too
# (whose own oracle, under target/, would be hidden as well).
hidden_by_the_oracle_sandbox() { case "$1/" in /tmp/* | /dev/*) return 0 ;; *) return 1 ;; esac; }
if [ -z "${DSH_TEST_VENV:-}" ] && hidden_by_the_oracle_sandbox "$(pwd -P)"; then
  cache="${XDG_CACHE_HOME:-${HOME:-/nonexistent}/.cache}"
  if hidden_by_the_oracle_sandbox "$cache" || ! mkdir -p "$cache" 2>/dev/null; then
    cache="/var/tmp/dsh-test-$(id -u)"
  fi
  venv="$cache/dsh-test/venv-$(pwd -P | sha256sum | cut -c1-16)"
  oracle_moved=1
  echo "checkout under /tmp or /dev: the test venv (and the official runtime) is $venv"
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# The official SDK drives our binary; the official runtime (a 95 MB wheel)
# is the oracle of the differential tests.
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
  'deepseek-harness-sdk==0.2.1rc2' 'deepseek-harness-runtime-bin==0.2.1rc2'
# mcp: the official MCP Python SDK, whose servers (tests/mcp) dsh's MCP client
# is tested against (tests/interop/test_mcp*.py).
# playwright: drives Debian's chromium in the browser tests of dsh web
# (tests/interop/test_web_browser.py; its own browsers are not downloaded).
"$venv/bin/pip" install --quiet --disable-pip-version-check 'pydantic>=2.12' 'pytest>=8' 'zstandard>=0.22' \
  'mcp==2.3.0' 'agent-client-protocol==0.12.1' 'playwright==1.65.3'
if [ -n "${oracle_moved:-}" ] && [ -z "${DSH_OFFICIAL_BIN:-}" ]; then
  DSH_OFFICIAL_BIN="$("$venv/bin/python" -c 'import deepseek_harness_runtime as r, pathlib
print(pathlib.Path(r.__file__).parent / "runtime" / "deepseek-harness-sdk-runtime-linux-x64")')"
  export DSH_OFFICIAL_BIN
fi
# The official runtime runs a workflow's children only inside its bubblewrap
# sandbox ("sandbox-unavailable" otherwise): the workflow differential test
# needs bwrap, installed from Debian's package when missing (as root).
if ! command -v bwrap >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "bwrap missing: installing the Debian package bubblewrap (the official runtime's sandbox)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; } ||
    echo "apt-get could not install bubblewrap" >&2
fi
# The browser tests of dsh web run Debian's chromium: installed when
# missing (as root).
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "chromium missing: installing the Debian package chromium (dsh web's browser tests)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } ||
    echo "apt-get could not install chromium" >&2
fi
# The hook scripts of tests/interop/hooks read their input with jq, as
# published Claude Code hooks do: Debian's package when missing (as root).
if ! command -v jq >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "jq missing: installing the Debian package jq (the hook scripts' JSON reader)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jq; } ||
    echo "apt-get could not install jq" >&2
fi
# Node and npm come from Debian packages when missing (as root): the python
# interop runs the npm MCP server @modelcontextprotocol/server-everything
# (tests/mcp/package.json), and the TypeScript interop below needs them too.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "node or npm missing: installing the Debian packages nodejs and npm"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm; } ||
      echo "apt-get could not install nodejs and npm" >&2
  fi
fi
if command -v npm >/dev/null 2>&1; then
  (cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error)
else
  echo "!! npm missing: tests/mcp (server-everything) is not installed; its interop tests will fail" >&2
fi
DSH_BIN="$PWD/target/debug/dsh" DSH_FAKE_MODEL="$PWD/target/debug/dsh-fake-model" "$venv/bin/python" -m pytest tests/interop -q -p no:cacheprovider

# --- TypeScript interop: the official @deepseek-ai/dsh-sdk-client drives target/debug/dsh.
# Node and npm were installed above when missing (as root); otherwise the
# tests are skipped with the reason, and under CI (CI set) that is a failure.
echo "== typescript interop (official @deepseek-ai/dsh-sdk-client drives target/debug/dsh)"
if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then
  dsh_bin="$PWD/target/debug/dsh"
  fake_model="$PWD/target/debug/dsh-fake-model"
  test_python="$(cd "$(dirname "$venv")" && pwd -P)/$(basename "$venv")/bin/python"
  (cd tests/ts && npm ci --legacy-peer-deps --no-audit --no-fund --loglevel=error && DSH_BIN="$dsh_bin" node --test)
  echo "== ACP interop (the protocol's TypeScript SDK, @agentclientprotocol/sdk, drives target/debug/dsh acp)"
  (cd tests/acp-ts && npm ci --no-audit --no-fund --loglevel=error &&
    DSH_BIN="$dsh_bin" DSH_FAKE_MODEL="$fake_model" DSH_TEST_PYTHON="$test_python" node --test)
  (cd examples/typescript && npm ci --legacy-peer-deps --no-audit --no-fund --loglevel=error && DSH_BIN="$dsh_bin" node two_step.mjs)
else
  echo "!! TypeScript interop tests SKIPPED: node and npm are not installed and could not be installed" \
    "(needs root and apt-get; or install Node >= 18 with npm yourself)" >&2
  if [ -n "${CI:-}" ]; then
    echo "!! CI must run the TypeScript interop tests: failing" >&2
    exit 1
  fi
fi
echo "== examples (the same offline two-step tool turn from each language) and the crate docs"
cargo run --quiet --locked -p dsh-client --example two_step -- target/debug/dsh
cargo run --quiet --locked -p dsh-client --example subscribe -- target/debug/dsh >/dev/null
DSH_BIN="$PWD/target/debug/dsh" "$venv/bin/python" examples/python/two_step.py
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --locked --workspace --no-deps
echo "== python wheel (a fresh venv pip-installs target/wheels/dsh_rs-*.whl; tests/interop drives the installed dsh)"
DSH_WHEEL_PROFILE="${DSH_WHEEL_PROFILE:-wheel-test}" scripts/test-wheel.sh
