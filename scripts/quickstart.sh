#!/usr/bin/env bash
# Builds the release binary and runs an offline agent task through the
# official Python SDK (installed into target/venv).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --locked -p dsh
venv="${DSH_TEST_VENV:-target/venv}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps 'deepseek-harness-sdk==0.2.1rc2'
"$venv/bin/pip" install --quiet --disable-pip-version-check 'pydantic>=2.12'
"$venv/bin/python" examples/quickstart.py target/release/dsh
