#!/usr/bin/env bash
# Tests the dsh-rs wheel the way a Python user takes it: builds it
# (scripts/build-wheel.sh), pip-installs it with the official SDK into a
# fresh venv, checks the installed package (packaging/python/tests) and runs
# the interop suite (tests/interop) against the INSTALLED dsh executable.
set -euo pipefail
cd "$(dirname "$0")/.."

wheel="$(scripts/build-wheel.sh | tail -n 1)"
echo "wheel: $wheel ($(du -k "$wheel" | cut -f1) KiB)"
cargo build --locked -p dsh-fake-model   # the fake model server of tests/interop

venv="target/wheel-test-venv"
rm -rf "$venv"
python3 -m venv "$venv"
pip=("$venv/bin/pip" install --quiet --disable-pip-version-check)
"${pip[@]}" "$wheel"
"${pip[@]}" --no-deps 'deepseek-harness-sdk==0.2.1rc2'
"${pip[@]}" 'pydantic>=2.12' 'pytest>=8' 'zstandard>=0.22' 'mcp==2.3.0' 'agent-client-protocol==0.12.1' \
  'playwright==1.65.3'   # mcp: tests/interop/test_mcp*.py; agent-client-protocol: test_acp*.py; playwright: test_web_browser.py
# The npm MCP server tests/interop/test_mcp.py runs (server-everything).
if command -v npm >/dev/null 2>&1; then
  (cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error)
fi
# The official runtime, the oracle of tests/interop/test_differential.py, is
# kept out of the venv: it installs a `dsh` launcher of its own into bin/.
oracle="target/wheel-test-oracle"
rm -rf "$oracle"
"${pip[@]}" --no-deps --target "$oracle" 'deepseek-harness-runtime-bin==0.2.1rc2'

dsh="$("$venv/bin/python" -c 'import dsh_rs; print(dsh_rs.binary_path())')"
echo "installed dsh: $dsh ($(du -k "$dsh" | cut -f1) KiB)"
case "$dsh" in "$PWD/$venv/bin/"*) ;; *) echo "dsh_rs.binary_path() is not in $venv/bin" >&2; exit 1 ;; esac

# pytest's temporary files (GBs for the interop suite) go to a directory of
# our own, removed afterwards, pass or fail.
basetemp="$(mktemp -d /tmp/dsh-wheel-pytest.XXXXXX)"
trap 'rm -rf "$basetemp"' EXIT
"$venv/bin/python" -m pytest packaging/python/tests -q -p no:cacheprovider --basetemp="$basetemp/wheel"
PYTHONPATH="$PWD/$oracle" DSH_BIN="$dsh" DSH_FAKE_MODEL="$PWD/target/debug/dsh-fake-model" \
  "$venv/bin/python" -m pytest tests/interop -q -p no:cacheprovider --basetemp="$basetemp/interop"
