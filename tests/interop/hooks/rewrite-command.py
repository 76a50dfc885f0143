#!/usr/bin/env python3
"""PreToolUse (Bash): rewrite `npm` to `pnpm` through updatedInput."""
import json
import re
import sys

data = json.load(sys.stdin)
tool_input = data["tool_input"]
command = tool_input.get("command", "")
if re.search(r"\bnpm\b", command):
    rewritten = dict(tool_input, command=re.sub(r"\bnpm\b", "pnpm", command))
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "allow",
            "permissionDecisionReason": "npm is pnpm in this repository",
            "updatedInput": rewritten,
        }
    }))
