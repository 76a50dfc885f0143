"""A scripted two-step tool turn, driven by the official Python SDK.

    DSH_BIN=target/debug/dsh python examples/python/two_step.py

`DSH_BIN` defaults to the `dsh` of an installed dsh-rs wheel (`dsh_rs`).
Prints the final answer and exits non-zero unless the turn completed.
"""

import os
import pathlib
import sys
import tempfile

from deepseek_harness import DeepSeekHarness


def dsh_bin() -> str:
    if os.environ.get("DSH_BIN"):
        return os.environ["DSH_BIN"]
    import dsh_rs  # the wheel's helper

    return dsh_rs.binary_path()


def main() -> int:
    scenario = pathlib.Path(__file__).resolve().parent.parent / "scenario.yaml"
    with tempfile.TemporaryDirectory() as tmp:
        workspace = pathlib.Path(tmp, "ws")
        workspace.mkdir()
        harness = DeepSeekHarness(
            dsh_bin=dsh_bin(),
            dsh_home=str(pathlib.Path(tmp, "home")),
            cwd=str(workspace),
            provider="scripted",
            model=str(scenario),
        )
        try:
            result = harness.start_session("example-two-step").run("What does the sandbox say?")
        finally:
            harness.close()
    print(result.final_response)
    return 0 if result.finish_reason == "completed" and "hello from the sandbox" in result.final_response else 1


if __name__ == "__main__":
    sys.exit(main())
