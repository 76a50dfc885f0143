"""The `workflow` tool through the official Python SDK: a JavaScript
program that orchestrates child agents, in the foreground and in the
background, with its limits, errors and cancellation; and a differential
run of a two-agent workflow against the official runtime.

Every model is scripted: the parent plays the scenario's top-level
``replies``, each child the ``agents`` entry whose ``when`` occurs in its
task.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time

import pytest

from test_differential import official_bin  # noqa: F401 - a fixture
from test_differential_tree import assert_same_tree, normalise, normalise_requests, parent_turns_ended, run_tree
from test_subagents import Tree, call, text, write


def read_log(path) -> list[dict]:
    """Every event of a session log, across all its zstd frames."""
    data = path.read_bytes()
    if path.suffix == ".zstd":
        import zstandard

        data = zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True).read()
    return [json.loads(line) for line in data.decode().splitlines() if line.strip()]


def workflow(script: str, name: str = "wf", call_id: str = "w1", **extra) -> dict:
    arguments = {"script": script, "meta": {"name": name, "description": "a probe"}, **extra}
    return call("workflow", arguments, call_id)


def events_of(tree: Tree, kind: str, session: str = "parent") -> list[dict]:
    return [e["data"] for e in tree.events(session) if e["type"] == kind]


def only_result(tree: Tree) -> dict:
    [result] = [r for r in tree.tool_results() if r["toolCallId"].startswith("w")]
    return result


def run_workflow(make_harness, base_dir, script, agents=(), after=(), prompt="Run it", env=None, **extra) -> Tree:
    model = write(base_dir, [workflow(script, **extra), *after, {"text": "Done."}, {"text": "More."}], agents)
    tree = Tree(make_harness(model=model, env=env or {}), "parent")
    tree.run(prompt)
    tree.wait()
    return tree


A = {"when": "TASK-A", "replies": [{"text": "ALPHA", "delay_ms": 300}, {"text": "ALPHA2"}]}
B = {"when": "TASK-B", "replies": [{"text": "BETA"}, {"text": "BETA2"}]}


def test_two_agents_in_a_row(make_harness, base_dir, dsh_home):
    script = 'const a = await agent("TASK-A say alpha");\nconst b = await agent("TASK-B say beta", {label: "second"});\nreturn {a, b, n: 2};'
    tree = run_workflow(make_harness, base_dir, script, [A, B], name="two-step")
    result = only_result(tree)
    assert result["isError"] is False
    assert text(result) == (
        'workflow "two-step" completed (2 agents).\nReturn value:\n{\n  "a": "ALPHA",\n  "b": "BETA",\n  "n": 2\n}'
    )
    children = tree.children()
    assert len(children) == 2
    [start] = events_of(tree, "tool-workflow/run-start")
    run_id = start["runId"]
    assert start == {"runId": run_id, "name": "two-step"}
    assert events_of(tree, "tool-workflow/agent-start") == [
        {"runId": run_id, "seq": 1, "label": "TASK-A say alpha", "childId": children[0]},
        {"runId": run_id, "seq": 2, "label": "second", "childId": children[1]},
    ]
    assert events_of(tree, "tool-workflow/agent-end") == [
        {"runId": run_id, "seq": 1, "outcome": "completed"},
        {"runId": run_id, "seq": 2, "outcome": "completed"},
    ]
    assert events_of(tree, "tool-workflow/run-end") == [{"runId": run_id, "stopReason": "completed"}]
    assert [c["label"] for c in events_of(tree, "subagent/catalog")] == ["two-step child 1", "two-step child 2"]
    # The parent's order: run-start, per child its catalog entry, agent-start and agent-end, then run-end.
    kinds = [e["type"] for e in tree.events("parent") if e["type"].startswith(("tool-workflow/", "subagent/", "tool/"))]
    assert kinds == ["tool/call", "tool-workflow/run-start",
                     "subagent/catalog", "tool-workflow/agent-start", "tool-workflow/agent-end",
                     "subagent/catalog", "tool-workflow/agent-start", "tool-workflow/agent-end",
                     "tool-workflow/run-end", "tool/result"]
    # Each child was finished before its agent-end; the parent's model hears nothing of them.
    frames = tree.frames()
    for n, child in enumerate(children, start=1):
        finished = frames.index(("subagent.finished", "parent", child))
        assert frames[finished + 1] == ("event", "parent", "tool-workflow/agent-end")
    assert not [m for m in events_of(tree, "user/message") if m["source"]["kind"] == "subagent-settled"]
    assert len(events_of(tree, "turn/end")) == 1
    # A child's task is the prompt alone; its log names it as the run's child.
    first_task = events_of(tree, "user/message", children[0])[0]
    assert first_task["content"] == [{"type": "text", "text": "TASK-A say alpha"}]
    [log] = list(dsh_home.glob(f"sessions/*/{children[0]}/session.v4.jsonl*"))
    lines = read_log(log)
    assert lines[0]["parentSession"] == "parent" and lines[0]["origin"] == "subagent"
    assert lines[1]["data"]["label"] == "two-step child 1"


def test_parallel_agents_run_together_with_more_slots(make_harness, base_dir):
    slow = {"when": "TASK-A", "replies": [{"text": "ALPHA", "delay_ms": 1500}]}
    script = 'return await parallel([() => agent("TASK-A one"), () => agent("TASK-B two")]);'
    tree = run_workflow(make_harness, base_dir, script, [slow, B], env={"DSH_WORKFLOW_CONCURRENCY": "2"})
    assert text(only_result(tree)).endswith('Return value:\n[\n  "ALPHA",\n  "BETA"\n]')
    # Both ran at once: the fast one ended first.
    assert [e["seq"] for e in events_of(tree, "tool-workflow/agent-end")] == [2, 1]


def test_one_slot_by_default_runs_parallel_agents_one_after_another(make_harness, base_dir):
    slow = {"when": "TASK-A", "replies": [{"text": "ALPHA", "delay_ms": 600}]}
    script = 'return await parallel([() => agent("TASK-A one"), () => agent("TASK-B two")]);'
    tree = run_workflow(make_harness, base_dir, script, [slow, B])
    assert text(only_result(tree)).endswith('[\n  "ALPHA",\n  "BETA"\n]')
    kinds = [(e["type"], e["data"].get("seq")) for e in tree.events("parent") if e["type"].startswith("tool-workflow/agent")]
    assert kinds == [("tool-workflow/agent-start", 1), ("tool-workflow/agent-end", 1),
                     ("tool-workflow/agent-start", 2), ("tool-workflow/agent-end", 2)]


def test_phase_pipeline_and_args(make_harness, base_dir):
    script = (
        'phase("Research");\n'
        'const found = await pipeline(args.items, (x) => agent("TASK-P" + x), (y, item) => y + ":" + item);\n'
        'const b = await agent("TASK-B q", {phase: "Custom"});\n'
        'return {found, b, k: args.k};'
    )
    agents = [{"when": "TASK-P1", "replies": [{"text": "ONE"}]}, {"when": "TASK-P2", "replies": [{"text": "TWO"}]}, B]
    tree = run_workflow(make_harness, base_dir, script, agents, args={"items": ["1", "2"], "k": "v"})
    value = json.loads(text(only_result(tree)).split("Return value:\n", 1)[1])
    assert value == {"found": ["ONE:1", "TWO:2"], "b": "BETA", "k": "v"}
    starts = events_of(tree, "tool-workflow/agent-start")
    assert [(s["label"], s.get("phase")) for s in starts] == [
        ("TASK-P1", "Research"), ("TASK-P2", "Research"), ("TASK-B q", "Custom")]
    assert list(starts[0]) == ["runId", "seq", "label", "phase", "childId"]


@pytest.mark.parametrize(
    "script, expected",
    [
        ("return {f: () => 1};", "workflow result.f: functions are not plain JSON data"),
        ("return 10n;", "workflow result: bigints are not JSON data"),
        ("const o = {}; o.self = o; return o;", "workflow result.self: circular references are not JSON data"),
        ("return {r: undefined};", "workflow result.r: undefined is not JSON data"),
    ],
)
def test_a_return_value_that_is_not_json_is_a_tool_error(make_harness, base_dir, script, expected):
    tree = run_workflow(make_harness, base_dir, script)
    result = only_result(tree)
    assert result["isError"] is True
    assert text(result) == (
        "Error: workflow run failed: WorkflowError: the workflow's return value is not plain JSON data \u2014 "
        f"{expected}. Return only JSON-serializable objects/arrays/scalars."
    )
    assert events_of(tree, "tool-workflow/run-end")[0]["stopReason"] == "error"


def test_syntax_and_runtime_errors_name_the_scripts_line_and_column(make_harness, base_dir):
    model = write(base_dir, [
        workflow("const a = 1;\nconst = ;\nreturn a;", call_id="w1"),
        workflow('log("before");\nconst x = 1;\nthrow new Error("boom here");', call_id="w2"),
        workflow('await Promise.reject("plain string");', call_id="w3"),
        {"text": "Done."},
    ])
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Run them")
    tree.wait()
    parse, thrown, rejected = tree.tool_results()
    assert parse["isError"] and parse["error"] == {"name": "WorkflowError", "code": "SCRIPT_PARSE"}
    assert text(parse).startswith("Error: workflow script does not parse: SyntaxError: ")
    assert "\n    at workflow:wf:2:" in text(parse)
    # The column is where QuickJS places the throw (the official runtime, V8, says 3:7).
    assert re.fullmatch(r"Error: workflow run failed: Error: boom here\n    at workflow:wf:3:\d+", text(thrown))
    assert text(rejected) == "Error: workflow run failed: plain string"
    # A script that does not parse never started a run.
    assert [e["stopReason"] for e in events_of(tree, "tool-workflow/run-end")] == ["error", "error"]
    assert len(events_of(tree, "tool-workflow/run-start")) == 2


def test_bad_arguments_and_meta_are_refused_before_a_run(make_harness, base_dir):
    model = write(base_dir, [
        call("workflow", {"script": "return 1", "meta": {"name": "x"}}, "w1"),
        call("workflow", {"script": 5, "meta": {"name": "x", "description": "d"}}, "w2"),
        call("workflow", {"script": "return 1", "meta": {"name": "", "description": "d"}}, "w3"),
        workflow('await agent("TASK-A", {foo: 1});', call_id="w4"),
        workflow("await agent(42);", call_id="w5"),
        {"text": "Done."},
    ])
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Run them")
    tree.wait()
    missing, wrong, meta, option, prompt = tree.tool_results()
    assert text(missing) == 'Error: invalid arguments: missing required property "meta.description"'
    assert missing["error"] == {"name": "ToolArgsError", "code": "INVALID_ARGS"}
    assert text(wrong) == 'Error: invalid arguments: "script" must be a string'
    assert text(meta) == "Error: invalid meta: meta.name must be a non-empty string"
    assert meta["error"] == {"name": "WorkflowError", "code": "META_INVALID"}
    assert text(option).startswith(
        'Error: workflow run failed: WorkflowError: agent() option "foo" is not recognized '
        "(supported: label, phase, schema, provider, model)")
    assert text(prompt).startswith("Error: workflow run failed: WorkflowError: agent() requires a non-empty prompt string")
    assert len(events_of(tree, "tool-workflow/run-start")) == 2
    assert tree.children() == []


def test_the_script_reaches_nothing_but_its_hooks(make_harness, base_dir):
    script = ('let imported = "no";\ntry { await import("fs"); imported = "yes"; } catch (e) { imported = "refused"; }\n'
              "return [typeof require, typeof fetch, typeof process, typeof setTimeout, typeof setInterval, "
              "typeof std, typeof os, imported, typeof agent, typeof args];")
    tree = run_workflow(make_harness, base_dir, script)
    value = json.loads(text(only_result(tree)).split("Return value:\n", 1)[1])
    assert value == ["undefined"] * 7 + ["refused", "function", "object"]


def test_an_endless_loop_is_stopped_by_the_cpu_limit(make_harness, base_dir):
    started = time.monotonic()
    tree = run_workflow(make_harness, base_dir, "let i = 0;\nwhile (true) { i++; }", env={"DSH_WORKFLOW_CPU_MS": "300"})
    assert time.monotonic() - started < 20
    result = only_result(tree)
    assert text(result) == (
        "Error: workflow run failed: the script used more than 300 ms of CPU time (DSH_WORKFLOW_CPU_MS)")
    assert events_of(tree, "tool-workflow/run-end")[0]["stopReason"] == "error"


def test_memory_is_bounded(make_harness, base_dir):
    script = 'const a = [];\nwhile (true) { a.push("x".repeat(1 << 20) + a.length); }'
    tree = run_workflow(make_harness, base_dir, script, env={"DSH_WORKFLOW_MEMORY_BYTES": str(8 << 20)})
    assert text(only_result(tree)).startswith("Error: workflow run failed: the script ran out of memory")


def test_structured_output(make_harness, base_dir):
    schema = {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}
    script = (f"const s = {json.dumps(schema)};\n"
              'const a = await agent("TASK-J json", {schema: s});\n'
              'const b = await agent("TASK-K fix", {schema: s});\n'
              'const c = await agent("TASK-L none", {schema: s});\n'
              "return {a, b, c};")
    agents = [
        {"when": "TASK-J", "replies": [call("structured_output", {"x": 5}, "so1"), {"text": "never asked"}]},
        {"when": "TASK-K", "replies": [call("structured_output", {"x": "nope"}, "so2"),
                                       call("structured_output", {"x": 7, "y": 1}, "so3")]},
        {"when": "TASK-L", "replies": [{"text": "I forgot"}]},
    ]
    tree = run_workflow(make_harness, base_dir, script, agents)
    value = json.loads(text(only_result(tree)).split("Return value:\n", 1)[1])
    assert value == {"a": {"x": 5}, "b": {"x": 7, "y": 1}, "c": None}
    assert [e["outcome"] for e in events_of(tree, "tool-workflow/agent-end")] == ["completed", "completed", "failed"]
    first, second, third = tree.children()
    assert [text(r) for r in tree.tool_results(first)] == ["Structured output recorded."]
    refused, recorded = tree.tool_results(second)
    assert text(refused) == 'Error: invalid arguments: "value.x" must be a number'
    assert refused["error"]["code"] == "INVALID_ARGS"
    assert text(recorded) == "Structured output recorded."
    # The first child's turn ended with the recording: one model request.
    assert len(events_of(tree, "assistant/message", first)) == 1
    header = events_of(tree, "request/header", first)[0]["header"]
    tool = next(t for t in header["tools"] if t["name"] == "structured_output")
    assert tool["parameters"] == schema
    assert "structured_output" not in [t["name"] for t in events_of(tree, "request/header")[0]["header"]["tools"]]


def test_a_failed_child_resolves_to_null(make_harness, base_dir):
    agents = [{"when": "TASK-E", "replies": [{"error": {"code": "BAD_REQUEST", "message": "bad", "status": 400}}]}]
    tree = run_workflow(make_harness, base_dir, 'const a = await agent("TASK-E fail");\nreturn {a};', agents)
    assert text(only_result(tree)) == 'workflow "wf" completed (1 agent).\nReturn value:\n{\n  "a": null\n}'
    assert events_of(tree, "tool-workflow/agent-end")[0]["outcome"] == "failed"


def test_run_in_background_reports_as_a_job(make_harness, base_dir):
    slow = {"when": "TASK-S", "replies": [{"text": "SLOW", "delay_ms": 1500}]}
    script = 'log("line one");\nconst a = await agent("TASK-S slow");\nreturn {a};'
    after = [call("job_output", {"job_id": "{{job}}", "wait": True, "timeout_ms": 20000}, "jo1"), call("job_list", {}, "jl1")]
    model = write(base_dir, [workflow(script, run_in_background=True), *after, {"text": "Waiting."}, {"text": "Seen."}], [slow])
    tree = Tree(make_harness(model=model), "parent")
    tree.run("Run it in the background")
    tree.wait()
    deadline = time.monotonic() + 20
    while len(events_of(tree, "turn/end")) < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    started, output, listed = tree.tool_results()
    [registered] = events_of(tree, "job/registered")
    job = registered["jobId"]
    assert job.startswith("workflow-") and len(job) == len("workflow-") + 16
    assert registered["kind"] == "workflow" and registered["label"] == "wf"
    assert text(started) == (f'workflow "wf" started in the background as job {job}. Its return value arrives with the '
                             "completion notice; check on it with job_output, stop it with job_kill.")
    assert text(output) == ('line one\nworkflow "wf" completed (1 agent).\nReturn value:\n{\n  "a": "SLOW"\n}\n'
                            "[status: completed, 1 agent]")
    assert text(listed) == f"{job} [workflow] completed \u2014 wf"
    [settled] = events_of(tree, "job/settled")
    assert (settled["status"], settled["cause"], settled["detail"]) == ("completed", "producer", "1 agent")
    # The run's start is recorded before the job, its end before the job settles.
    kinds = [e["type"] for e in tree.events("parent")]
    assert kinds.index("tool-workflow/run-start") < kinds.index("job/registered") < kinds.index("tool/result")
    assert kinds.index("tool-workflow/run-end") < kinds.index("job/settled")


def test_a_background_run_that_ends_later_wakes_the_agent(make_harness, base_dir):
    slow = {"when": "TASK-S", "replies": [{"text": "SLOW", "delay_ms": 800}]}
    tree = run_workflow(make_harness, base_dir, 'return await agent("TASK-S slow");', [slow], run_in_background=True)
    deadline = time.monotonic() + 20
    while len(events_of(tree, "turn/end")) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
        tree.drain()
    notices = [m for m in events_of(tree, "user/message") if m["source"]["kind"] == "tool-jobs"]
    [job] = [e["jobId"] for e in events_of(tree, "job/registered")]
    assert [text(n) for n in notices] == [
        f"background job {job} (workflow: wf) finished [status: completed, 1 agent]. Read its output with job_output."]
    assert notices[0]["source"]["summary"] == "workflow wf [status: completed, 1 agent]"


def test_job_kill_stops_the_script_and_its_agents(make_harness, base_dir):
    stuck = {"when": "TASK-S", "replies": [{"text": "late", "delay_ms": 30000}]}
    after = [call("job_output", {"job_id": "{{job}}", "wait": True, "timeout_ms": 800}, "jo0"),
             call("job_kill", {"job_id": "{{job}}", "reason": "enough"}, "jk1"),
             call("job_output", {"job_id": "{{job}}", "wait": True, "timeout_ms": 10000}, "jo1")]
    tree = run_workflow(make_harness, base_dir, 'const a = await agent("TASK-S slow");\nreturn {a};', [stuck],
                        after=after, run_in_background=True)
    results = tree.tool_results()
    assert text(results[1]) == "(no new output)\n[status: running]\n[still running after waiting 800ms]"
    [job] = [e["jobId"] for e in events_of(tree, "job/registered")]
    assert text(results[2]) == f"requested cancellation of job {job}"
    assert text(results[3]).endswith("[status: killed, enough]")
    assert events_of(tree, "tool-workflow/run-end")[0]["stopReason"] == "cancelled"
    [settled] = events_of(tree, "job/settled")
    assert (settled["status"], settled["cause"], settled["detail"]) == ("killed", "kill", "enough")
    [child] = tree.children()
    assert events_of(tree, "turn/end", child)[0]["reason"]["kind"] == "aborted"
    assert events_of(tree, "tool-workflow/agent-end")[0]["outcome"] == "cancelled"
    # No notice for a run the model stopped itself.
    assert not [m for m in events_of(tree, "user/message") if m["source"]["kind"] == "tool-jobs"]


def test_shutdown_mid_run_stops_the_script_and_its_agents(make_raw, base_dir, dsh_home, workspace):
    from interop_support import write_scenario

    stuck = {"when": "TASK-S", "replies": [{"text": "late", "delay_ms": 60000}]}
    scenario = write_scenario(base_dir, [workflow('return await agent("TASK-S slow");')], agents=[stuck])
    raw = make_raw()
    raw.initialize(workspace, model=scenario)
    raw.prompt("parent", "Run it")
    raw.wait_for(lambda f: f.get("method") == "subagent.started", what="subagent.started")
    time.sleep(0.3)
    started = time.monotonic()
    assert raw.shutdown() == 0
    assert time.monotonic() - started < 10
    logs = list(dsh_home.glob("sessions/*/*/session.v4.jsonl*"))
    children = [p for p in logs if p.parent.name != "parent"]
    assert len(children) == 1
    assert read_log(children[0])[-1]["type"] == "turn/end"


def test_the_roster_matches_the_official_one_in_a_plain_turn(official_bin, dsh_bin, fake_model, base_dir):  # noqa: F811
    tools = {}
    for who, binary in (("official", official_bin), ("ours", dsh_bin)):
        server = fake_model([{"text": "hi"}])
        run_tree(binary, base_dir / who, server, "Say hi", parent_turns_ended(1))
        [request] = [r for r in server.requests() if r["path"] == "/v1/messages"]
        tools[who] = request["body"]["tools"]

    def shape(schema):
        if isinstance(schema, dict):
            return {k: (shape(v) if k != "properties" else {n: shape(p) for n, p in v.items()})
                    for k, v in schema.items() if not (k == "description" and isinstance(v, str))}
        return [shape(v) for v in schema] if isinstance(schema, list) else schema

    assert [t["name"] for t in tools["ours"]] == [t["name"] for t in tools["official"]]
    assert len(tools["ours"]) == 25
    for mine, theirs in zip(tools["ours"], tools["official"]):
        assert json.dumps(shape(mine["input_schema"])) == json.dumps(shape(theirs["input_schema"])), mine["name"]


# The second child runs on a model the script chose (its effort is then
# the model's default, not the parent's).
DIFF_SCRIPT = ('const a = await agent("TASK-A say alpha");\n'
               'const b = await agent("TASK-B say beta", {label: "second", model: "deepseek-v4-pro"});\n'
               "return {a, b, n: 2};")


def test_a_two_agent_workflow_matches_the_official_runtime(official_bin, dsh_bin, fake_model, base_dir):  # noqa: F811
    replies = [{"blocks": [{"tool_call": {"id": "toolu_wf_1", "name": "workflow", "arguments": {
        "script": DIFF_SCRIPT, "meta": {"name": "two-step", "description": "Two agents in a row"}}}}]},
        {"text": "Workflow done."}]
    agents = [{"when": "TASK-A", "replies": [{"text": "ALPHA", "delay_ms": 200}]},
              {"when": "TASK-B", "replies": [{"text": "BETA"}]}]
    runs = {}
    for who, binary in (("official", official_bin), ("ours", dsh_bin)):
        server = fake_model(replies, agents)
        base = base_dir / who
        notifications = run_tree(binary, base, server, "Run the workflow", parent_turns_ended(1))
        assert "sandbox-unavailable" not in json.dumps(notifications), (
            f"{who}: the workflow found no sandbox; the official runtime runs its children "
            "only inside bubblewrap (apt-get install bubblewrap)")
        notifications = json.loads(json.dumps(notifications).replace(str(base), "<base>"))
        for _, params in notifications:
            event = params.get("event") if isinstance(params, dict) else None
            if event and event["type"].startswith("tool-workflow/"):
                event["data"]["runId"] = "<run>"
        streams, view, statuses, names = normalise(copy.deepcopy(notifications))
        runs[who] = (streams, view, statuses, normalise_requests(server, names, base))
        (base_dir / f"{who}.norm.json").write_text(json.dumps(runs[who], indent=1, default=str))
    ours = runs["ours"]
    assert_same_tree(ours, runs["official"])
    assert sorted(json.loads(r)["model"] for r in ours[3]) == [
        "deepseek-v4-flash", "deepseek-v4-flash", "deepseek-v4-flash", "deepseek-v4-pro"]


@pytest.mark.parametrize("var, value", [("DSH_WORKFLOW_CPU_MS", "fast"), ("DSH_WORKFLOW_CONCURRENCY", "9"),
                                        ("DSH_WORKFLOW_MEMORY_BYTES", "1000")])
def test_a_bad_workflow_limit_stops_the_launch(dsh_bin, dsh_home, base_dir, var, value):
    import subprocess

    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(base_dir / "home"), "DSH_HOME": str(dsh_home), var: value}
    done = subprocess.run([str(dsh_bin), "--profile", "sdk"], input="", capture_output=True, text=True, env=env,
                          timeout=30)
    assert done.returncode != 0
    assert done.stdout == ""
    assert done.stderr.startswith(f'dsh: {var}="{value}" is not valid: expected '), done.stderr


def test_shutdown_stops_a_background_run(make_raw, base_dir, dsh_home, workspace):
    from interop_support import write_scenario

    stuck = {"when": "TASK-S", "replies": [{"text": "late", "delay_ms": 60000}]}
    scenario = write_scenario(base_dir, [workflow('return await agent("TASK-S slow");', run_in_background=True),
                                         {"text": "Started it."}], agents=[stuck])
    raw = make_raw()
    raw.initialize(workspace, model=scenario)
    raw.prompt("parent", "Run it in the background")
    raw.wait_for(lambda f: f.get("method") == "subagent.started", what="subagent.started")
    raw.status("parent", "idle")
    started = time.monotonic()
    assert raw.shutdown() == 0
    assert time.monotonic() - started < 10
    [parent] = list(dsh_home.glob("sessions/*/parent/session.v4.jsonl*"))
    events = read_log(parent)
    assert "job/registered" in [e.get("type") for e in events]
    children = [p for p in dsh_home.glob("sessions/*/*/session.v4.jsonl*") if p.parent.name != "parent"]
    assert len(children) == 1 and read_log(children[0])[-1]["type"] == "turn/end"


def test_the_workflow_example_runs_headless(dsh_bin, dsh_home, base_dir):
    import subprocess
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "workflow.yaml"
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(base_dir / "home"), "DSH_HOME": str(dsh_home)}
    done = subprocess.run([str(dsh_bin), "headless", "--json", "--model", str(example), "Review the change"],
                          capture_output=True, text=True, env=env, timeout=60, cwd=base_dir)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in done.stdout.splitlines()]
    [result] = [r for r in records if r["type"] == "tool_result"]
    assert result["status"] == "completed"
    value = json.loads(result["result"].split("Return value:\n", 1)[1])
    assert value == {"notes": ["parser: the error path loses the line number.", "writer: fine."],
                     "summary": "One fix needed: keep the line number on parser errors."}
    assert result["result"].startswith('workflow "review" completed (3 agents).')
