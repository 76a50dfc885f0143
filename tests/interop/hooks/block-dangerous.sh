#!/usr/bin/env bash
# PreToolUse (Bash): refuse destructive commands; exit code 2 blocks the call
# and stderr tells the model why. The kind of script people publish for
# Claude Code.
set -euo pipefail
command=$(jq -r '.tool_input.command // ""')
if echo "$command" | grep -Eq 'rm[[:space:]]+(-[a-zA-Z]*r[a-zA-Z]*f|-[a-zA-Z]*f[a-zA-Z]*r)'; then
  echo "Blocked: '$command' deletes recursively; remove files one by one." >&2
  exit 2
fi
exit 0
