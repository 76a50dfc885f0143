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
cargo test --workspace --locked

echo "== python interop (official deepseek-harness-sdk drives target/debug/dsh)"
venv="${DSH_TEST_VENV:-target/venv}"
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# The official SDK drives our binary; the official runtime (a 95 MB wheel)
# is the oracle of the differential tests.
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps \
  'deepseek-harness-sdk==0.2.1rc2' 'deepseek-harness-runtime-bin==0.2.1rc2'
"$venv/bin/pip" install --quiet --disable-pip-version-check 'pydantic>=2.12' 'pytest>=8' 'zstandard>=0.22'
DSH_BIN="$PWD/target/debug/dsh" DSH_FAKE_MODEL="$PWD/target/debug/dsh-fake-model" "$venv/bin/python" -m pytest tests/interop -q -p no:cacheprovider

echo "== python wheel (a fresh venv pip-installs target/wheels/dsh_rs-*.whl; tests/interop drives the installed dsh)"
scripts/test-wheel.sh
