#!/usr/bin/env bash
# PreToolUse (Bash): a human decides about anything that publishes.
set -euo pipefail
command=$(jq -r '.tool_input.command // ""')
if [[ "$command" == *"publish"* ]]; then
  printf '{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"ask","permissionDecisionReason":"this publishes: %s"}}\n' "$command"
fi
