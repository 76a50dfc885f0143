#!/usr/bin/env bash
# Any event: append the input (one JSON line) to $1 under the project dir.
cat >> "$CLAUDE_PROJECT_DIR/$1"
echo >> "$CLAUDE_PROJECT_DIR/$1"
