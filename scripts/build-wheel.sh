#!/usr/bin/env bash
# Builds the dsh-rs Python wheel (the release `dsh` executable plus the tiny
# `dsh_rs` package, packaging/python/) into target/wheels/ with maturin from
# its own venv (target/wheel-venv). Idempotent: reruns reuse the venv and
# cargo's build. Prints the wheel's path as its last line.
set -euo pipefail
cd "$(dirname "$0")/.."

maturin_version="1.16.0"
venv="target/wheel-venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if [ "$("$venv/bin/maturin" --version 2>/dev/null)" != "maturin $maturin_version" ]; then
  "$venv/bin/pip" install --quiet --disable-pip-version-check "maturin==$maturin_version"
fi

version="$(cargo metadata --no-deps --format-version 1 --locked --manifest-path crates/dsh/Cargo.toml |
  "$venv/bin/python" -c 'import json, sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"] == "dsh"))')"
out="$PWD/target/wheels"
# The oldest tag the auditor accepts for a build on this machine (glibc 2.36):
# the binary needs glibc 2.34 symbols (libc merged libpthread there), so
# manylinux_2_17 (manylinux2014) is refused without an older sysroot (a
# manylinux container, or maturin --zig). Override with DSH_WHEEL_COMPATIBILITY.
compatibility="${DSH_WHEEL_COMPATIBILITY:-manylinux_2_34}"
# Only this version's wheel is left, so the path printed is unambiguous.
rm -f "$out"/dsh_rs-"$version"-*.whl
# DSH_WHEEL_PROFILE: the cargo profile of the packed binary (release unless
# told; the test command uses wheel-test, release without LTO).
profile="${DSH_WHEEL_PROFILE:-release}"
(cd packaging/python && "../../$venv/bin/maturin" build --profile "$profile" --locked --compatibility "$compatibility" --out "$out" >&2)
ls "$out"/dsh_rs-"$version"-*.whl
