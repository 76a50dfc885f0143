#!/usr/bin/env bash
# UserPromptSubmit: add context the model should know (stdout on exit 0).
set -euo pipefail
prompt=$(jq -r '.prompt')
if echo "$prompt" | grep -q 'SECRET-TOKEN'; then
  echo "Your prompt seems to contain a credential; it was not sent." >&2
  exit 2
fi
echo "Project codename: BLUEBIRD. Current branch: main."
