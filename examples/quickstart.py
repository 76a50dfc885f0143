"""Drive the native dsh runtime with the official Python SDK, fully offline.

Usage: python examples/quickstart.py [path/to/dsh]
"""

import sys
import tempfile
from pathlib import Path

from deepseek_harness import DeepSeekHarness

root = Path(__file__).resolve().parent.parent
dsh = sys.argv[1] if len(sys.argv) > 1 else str(root / "target" / "release" / "dsh")
scenario = str(root / "examples" / "quickstart.yaml")

with tempfile.TemporaryDirectory() as tmp, DeepSeekHarness(
    dsh_bin=dsh,
    dsh_home=str(Path(tmp) / "home"),
    cwd=tmp,
    provider="scripted",
    model=scenario,
) as harness:
    session = harness.start_session()
    result = session.run("Say hello")
    for event in result.events:
        data = event["data"]
        if event["type"] == "assistant/message":
            for block in data["message"]["content"]:
                print(f"  [{block['type']}] {block.get('text') or block.get('name')}")
        elif event["type"] == "tool/result":
            print(f"  [tool result] {data['message']['content'][0]['text']}")
    print(f"final_response: {result.final_response!r}")
    print(f"finish_reason:  {result.finish_reason}")
    echo = harness.run("And now echo me", session_id=None)
    print(f"second session: {echo.finish_reason}")
