#!/usr/bin/env python3
"""Stop: do not let the agent stop until the test suite has passed (a
marker file the test run writes); bounded by stop_hook_active."""
import json
import os
import sys

data = json.load(sys.stdin)
with open(os.path.join(os.environ["CLAUDE_PROJECT_DIR"], "stop-inputs.jsonl"), "a") as log:
    log.write(json.dumps(data) + "\n")
if data.get("stop_hook_active"):
    sys.exit(0)
if not os.path.exists(os.path.join(data["cwd"], "tests-passed")):
    print(json.dumps({"decision": "block", "reason": "The tests have not passed yet: run ./run-tests.sh first."}))
sys.exit(0)
