#!/usr/bin/env bash
# PostToolUse (Write|Edit): "format" the file that was written: strip
# trailing blanks and end it with a newline (a stand-in for prettier/black).
set -euo pipefail
file=$(jq -r '.tool_input.file_path // empty')
[ -n "$file" ] && [ -f "$file" ] || exit 0
sed -i -e 's/[[:space:]]*$//' "$file"
[ -z "$(tail -c1 "$file")" ] || echo >> "$file"
echo "formatted $file" >> "$CLAUDE_PROJECT_DIR/format.log"
