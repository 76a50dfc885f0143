#!/usr/bin/env python3
"""PreToolUse (Write|Edit): deny writes to .env files with a JSON decision."""
import json
import os
import sys

data = json.load(sys.stdin)
path = data.get("tool_input", {}).get("file_path", "")
if os.path.basename(path).startswith(".env"):
    print(json.dumps({
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": f"{os.path.basename(path)} holds secrets and is protected",
        }
    }))
sys.exit(0)
