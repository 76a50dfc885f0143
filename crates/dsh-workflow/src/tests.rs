//! End-to-end tests of runs: scripts, the host side and every error text.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::{AgentCall, Event, Limits, Run, RunError, Script};

/// What a run reported.
#[derive(Debug)]
struct Outcome {
    events: Vec<Event>,
    calls: Vec<AgentCall>,
    logs: Vec<String>,
    result: Result<Value, RunError>,
}

/// Runs `source` to its end, answering each agent call with `answer`.
fn run_full(
    source: &str,
    args: Value,
    limits: Limits,
    mut answer: impl FnMut(&AgentCall) -> Value,
) -> Outcome {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let script = Script {
            name: "wf".to_owned(),
            source: source.to_owned(),
            args,
        };
        let mut run = Run::start(script, limits);
        let mut events = Vec::new();
        let mut calls = Vec::new();
        let mut logs = Vec::new();
        let mut result = None;
        while let Some(event) = run.next().await {
            match &event {
                Event::Agent(call) => {
                    calls.push(call.clone());
                    run.settle(call.id, answer(call));
                }
                Event::Log(line) => logs.push(line.clone()),
                Event::Finished(outcome) => result = Some(outcome.clone()),
                Event::Started => {}
            }
            events.push(event);
        }
        Outcome {
            events,
            calls,
            logs,
            result: result.unwrap(),
        }
    })
}

/// The result of `source` with no args, default limits, and agents that
/// answer with their prompt in upper case.
fn run(source: &str) -> Result<Value, RunError> {
    run_full(source, json!({}), Limits::default(), |call| {
        Value::String(call.prompt.to_uppercase())
    })
    .result
}

/// The failure text of `source`.
fn failure(source: &str) -> String {
    match run(source) {
        Ok(value) => panic!("expected a failure, got {value}"),
        Err(err) => err.to_string(),
    }
}

/// Starts `source` with default limits and no args.
fn start(source: &str, limits: Limits) -> Run {
    Run::start(
        Script {
            name: "wf".to_owned(),
            source: source.to_owned(),
            args: json!({}),
        },
        limits,
    )
}

/// A current-thread runtime for tests that drive a [`Run`] by hand.
fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}

/// Limits with a CPU limit of `ms` milliseconds.
fn cpu_limit(ms: u64) -> Limits {
    Limits {
        cpu: Duration::from_millis(ms),
        ..Limits::default()
    }
}

#[test]
fn two_agents_in_sequence() {
    let outcome = run_full(
        "const plan = await agent(\"make a plan\", {label: \"planner\"});\n\
         const done = await agent(\"carry out: \" + plan);\n\
         return {plan, done};",
        json!({}),
        Limits::default(),
        |call| match call.id {
            1 => json!("the plan"),
            _ => json!("done it"),
        },
    );
    assert_eq!(
        outcome.result,
        Ok(json!({"plan": "the plan", "done": "done it"}))
    );
    assert!(matches!(outcome.events.first(), Some(Event::Started)));
    assert_eq!(outcome.calls.len(), 2);
    assert_eq!(
        outcome.calls[0],
        AgentCall {
            id: 1,
            prompt: "make a plan".to_owned(),
            label: Some("planner".to_owned()),
            phase: None,
            schema: None,
            provider: None,
            model: None,
        }
    );
    assert_eq!(outcome.calls[1].id, 2);
    assert_eq!(outcome.calls[1].prompt, "carry out: the plan");
    assert_eq!(outcome.calls[1].label, None);
}

#[test]
fn structured_and_failed_children() {
    let outcome = run_full(
        "const schema = {type: \"object\", properties: {n: {type: \"number\"}}};\n\
         const a = await agent(\"count\", {schema, provider: \"p\", model: \"m\"});\n\
         const b = await agent(\"fail\");\n\
         return {n: a.n, failed: b === null};",
        json!({}),
        Limits::default(),
        |call| match call.id {
            1 => json!({"n": 7}),
            _ => Value::Null,
        },
    );
    assert_eq!(outcome.result, Ok(json!({"n": 7, "failed": true})));
    let first = &outcome.calls[0];
    assert_eq!(
        first.schema,
        Some(json!({"type": "object", "properties": {"n": {"type": "number"}}}))
    );
    assert_eq!(first.provider.as_deref(), Some("p"));
    assert_eq!(first.model.as_deref(), Some("m"));
}

#[test]
fn parallel_keeps_the_order_of_its_items() {
    // The host answers the calls in reverse order of arrival.
    let result = block_on(async {
        let mut run = start(
            "return await parallel([() => agent(\"x\"), () => agent(\"y\"), agent(\"z\"), 3, Promise.resolve(4), async () => 5]);",
            Limits::default(),
        );
        let mut calls = Vec::new();
        loop {
            match run.next().await {
                Some(Event::Agent(call)) => {
                    calls.push(call);
                    if calls.len() == 3 {
                        for call in calls.iter().rev() {
                            run.settle(call.id, json!(format!("{}!", call.prompt)));
                        }
                    }
                }
                Some(Event::Finished(result)) => break result,
                Some(_) => {}
                None => panic!("no Finished"),
            }
        }
    });
    assert_eq!(result, Ok(json!(["x!", "y!", "z!", 3, 4, 5])));
    assert_eq!(
        failure("return parallel(() => 1)"),
        "workflow run failed: WorkflowError: parallel() requires an array (of functions to call, promises or values)\n    at workflow:wf:1:8"
    );
}

#[test]
fn pipeline_runs_stages_with_the_original_item() {
    assert_eq!(
        run("return await pipeline([\"a\",\"b\"], x => x+\"1\", (y, i) => y+\"2\"+String(i))"),
        Ok(json!(["a12a", "b12b"]))
    );
    assert_eq!(
        run(
            "return await pipeline([\"p\", \"q\"], x => agent(\"do \" + x), async (y, i) => y + \"/\" + i)"
        ),
        Ok(json!(["DO P/p", "DO Q/q"]))
    );
    assert_eq!(run("return await pipeline([1, 2])"), Ok(json!([1, 2])));
    assert!(
        failure("await pipeline(\"ab\", x => x)")
            .starts_with("workflow run failed: WorkflowError: pipeline() requires an items array")
    );
    assert!(failure("await pipeline([1], 5)").contains("pipeline() stage 1 is a number"));
}

#[test]
fn phases_reach_agent_calls() {
    let outcome = run_full(
        "await agent(\"before\");\n\
         const r = phase(\"Research\", () => { throw new Error(\"must not run\") });\n\
         await agent(\"a\");\n\
         await agent(\"b\", {phase: \"Other\"});\n\
         phase(\"Write\");\n\
         await agent(\"c\");\n\
         return r === undefined;",
        json!({}),
        Limits::default(),
        |_| Value::Null,
    );
    assert_eq!(outcome.result, Ok(json!(true)));
    let phases: Vec<Option<&str>> = outcome.calls.iter().map(|c| c.phase.as_deref()).collect();
    assert_eq!(
        phases,
        [None, Some("Research"), Some("Other"), Some("Write")]
    );
    assert!(
        failure("phase(\"\")").contains("WorkflowError: phase() requires a non-empty title string")
    );
    assert!(failure("phase(3)").contains("phase() requires"));
}

#[test]
fn args_are_a_copy_of_the_json() {
    let outcome = run_full(
        "args.list.push(4); return {n: args.n + 1, list: args.list, nested: args.o.k};",
        json!({"n": 41, "list": [1, 2, 3], "o": {"k": "v"}}),
        Limits::default(),
        |_| Value::Null,
    );
    assert_eq!(
        outcome.result,
        Ok(json!({"n": 42, "list": [1, 2, 3, 4], "nested": "v"}))
    );
    assert_eq!(run("return args"), Ok(json!({})));
}

#[test]
fn return_values() {
    assert_eq!(run(""), Ok(Value::Null));
    assert_eq!(run("return"), Ok(Value::Null));
    assert_eq!(run("return null"), Ok(Value::Null));
    assert_eq!(run("return 1.5"), Ok(json!(1.5)));
    assert_eq!(run("return 2 ** 40"), Ok(json!(1_099_511_627_776_i64)));
    assert_eq!(run("return -0"), Ok(json!(0)));
    assert_eq!(run("return 'é'"), Ok(json!("é")));
    assert_eq!(
        run(
            "const shared = {s: 1}; return {b: true, z: 0, a: [shared, shared], o: Object.create(null)}"
        ),
        Ok(json!({"b": true, "z": 0, "a": [{"s": 1}, {"s": 1}], "o": {}}))
    );
    // Keys keep their insertion order.
    let keys = run("return {zeta: 1, alpha: 2, mid: 3}").unwrap();
    let keys: Vec<&String> = keys.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["zeta", "alpha", "mid"]);
}

/// The failure text for a return value that is not JSON.
fn not_json(rest: &str) -> String {
    format!(
        "workflow run failed: WorkflowError: the workflow's return value is not plain JSON data \u{2014} workflow result{rest}. Return only JSON-serializable objects/arrays/scalars."
    )
}

#[test]
fn non_json_results_name_their_path() {
    assert_eq!(
        failure("return {f: () => 1}"),
        not_json(".f: functions are not plain JSON data")
    );
    assert_eq!(
        failure("return 10n"),
        not_json(": bigints are not JSON data")
    );
    assert_eq!(
        failure("const o = {}; o.self = o; return o"),
        not_json(".self: circular references are not JSON data")
    );
    assert_eq!(
        failure("return {r: undefined}"),
        not_json(".r: undefined is not JSON data")
    );
    assert_eq!(
        failure("return {list: [1, {\"odd key\": [0, Symbol(\"s\")]}]}"),
        not_json(".list[1][\"odd key\"][1]: symbols are not JSON data")
    );
    assert_eq!(
        failure("return [1, , 3]"),
        not_json("[1]: undefined is not JSON data")
    );
    assert_eq!(
        failure("return {n: NaN}"),
        not_json(".n: NaN is not JSON data")
    );
    assert_eq!(
        failure("return [-Infinity]"),
        not_json("[0]: -Infinity is not JSON data")
    );
    assert_eq!(
        failure("return {d: new Date(0)}"),
        not_json(".d: Date objects are not plain JSON data")
    );
    assert_eq!(
        failure("return new Map()"),
        not_json(": Map objects are not plain JSON data")
    );
    assert_eq!(
        failure("class Point { constructor() { this.x = 1 } }\nreturn {p: new Point()}"),
        not_json(".p: Point objects are not plain JSON data")
    );
    assert_eq!(
        failure("return {p: agent(\"x\")}"),
        not_json(".p: Promise objects are not plain JSON data")
    );
}

#[test]
fn results_over_the_size_limit_fail() {
    let limits = Limits {
        max_result_bytes: 1000,
        ..Limits::default()
    };
    let outcome = run_full(
        "return \"x\".repeat(2000)",
        json!({}),
        limits.clone(),
        |_| Value::Null,
    );
    let err = outcome.result.unwrap_err().to_string();
    assert!(err.contains("larger than the limit of 1000 bytes"), "{err}");
    // Indentation counts: many small nested values.
    let outcome = run_full(
        "return Array.from({length: 100}, () => [[1]])",
        json!({}),
        limits.clone(),
        |_| Value::Null,
    );
    assert!(outcome.result.is_err());
    let outcome = run_full("return \"x\".repeat(900)", json!({}), limits, |_| {
        Value::Null
    });
    assert_eq!(outcome.result, Ok(json!("x".repeat(900))));
}

#[test]
fn thrown_errors_carry_script_positions() {
    assert_eq!(
        failure("const a = 1;\nconst b = 2;\nthrow new Error(\"boom here\");"),
        "workflow run failed: Error: boom here\n    at workflow:wf:3:11"
    );
    assert_eq!(
        failure("function inner() {\n  null.x;\n}\nfunction outer() { inner(); }\nouter();"),
        "workflow run failed: TypeError: cannot read property 'x' of null\n    at workflow:wf:2:3\n    at workflow:wf:4:20\n    at workflow:wf:5:1"
    );
    assert_eq!(
        failure("await Promise.reject(\"plain string\")"),
        "workflow run failed: plain string"
    );
    assert_eq!(
        failure("throw {code: 7}"),
        "workflow run failed: {\"code\":7}"
    );
    assert_eq!(failure("throw 42"), "workflow run failed: 42");
    assert_eq!(
        failure("throw new Error()"),
        "workflow run failed: Error\n    at workflow:wf:1:11"
    );
    // Frames inside the prelude are dropped; the caller's frame stays.
    assert_eq!(
        failure("\n  await agent(\"\");"),
        "workflow run failed: WorkflowError: agent() requires a non-empty prompt string\n    at workflow:wf:2:9"
    );
}

#[test]
fn syntax_errors_are_parse_errors_with_positions() {
    let outcome = run_full(
        "const a = 1;\n  let x = = 3;",
        json!({}),
        Limits::default(),
        |_| Value::Null,
    );
    let err = outcome.result.unwrap_err();
    assert!(err.is_parse());
    assert_eq!(
        err.to_string(),
        "workflow script does not parse: SyntaxError: unexpected token in expression: '='\n    at workflow:wf:2:11"
    );
    // Nothing but Finished is reported.
    assert_eq!(outcome.events.len(), 1);
    // A missing brace points at the end of the script.
    let err = run("if (true) {\n  log(1)").unwrap_err();
    assert!(err.is_parse());
    assert!(
        err.to_string().ends_with("\n    at workflow:wf:2:9"),
        "{err}"
    );
    assert!(!run("throw 1").unwrap_err().is_parse());
}

#[test]
fn the_sandbox_has_only_the_hooks() {
    assert_eq!(
        run(
            "return [typeof require, typeof fetch, typeof process, typeof setTimeout, typeof setInterval, typeof std, typeof os, typeof queueMicrotask, typeof performance]"
        ),
        Ok(json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined"
        ]))
    );
    assert_eq!(
        run(
            "return [typeof agent, typeof parallel, typeof pipeline, typeof phase, typeof log, typeof args, typeof console.log]"
        ),
        Ok(json!([
            "function", "function", "function", "function", "function", "object", "function"
        ]))
    );
    assert_eq!(
        run("try { await import(\"x\"); return \"loaded\" } catch (e) { return String(e) }"),
        Ok(json!("ReferenceError: could not load module 'x'"))
    );
    // Only the hooks are added to the standard globals.
    let names = run("return Object.getOwnPropertyNames(globalThis)").unwrap();
    let names: Vec<&str> = names
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for hook in [
        "agent", "parallel", "pipeline", "phase", "log", "args", "console",
    ] {
        assert!(names.contains(&hook), "{hook} missing");
    }
    for absent in [
        "WorkflowError",
        "DOMException",
        "performance",
        "queueMicrotask",
        "atob",
    ] {
        assert!(!names.contains(&absent), "{absent} present");
    }
    assert_eq!(run("return eval(\"1 + 1\")"), Ok(json!(2)));
}

#[test]
fn cpu_limit_stops_an_endless_loop() {
    let started = Instant::now();
    let outcome = run_full("while (true) {}", json!({}), cpu_limit(200), |_| {
        Value::Null
    });
    assert_eq!(outcome.result, Err(RunError::CpuLimit { limit_ms: 200 }));
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(
        outcome.result.unwrap_err().to_string(),
        "workflow run failed: the script used more than 200 ms of CPU time (DSH_WORKFLOW_CPU_MS)"
    );
}

#[test]
fn cpu_limit_cannot_be_caught() {
    let caught = "try { while (true) {} } catch (e) {}\nreturn \"escaped\"";
    assert_eq!(
        run_full(caught, json!({}), cpu_limit(100), |_| Value::Null).result,
        Err(RunError::CpuLimit { limit_ms: 100 })
    );
    // The looping function's promise rejects and the script waits forever.
    let pending =
        "(async () => { while (true) {} })().catch(() => {});\nawait new Promise(() => {});";
    assert_eq!(
        run_full(pending, json!({}), cpu_limit(100), |_| Value::Null).result,
        Err(RunError::CpuLimit { limit_ms: 100 })
    );
}

#[test]
fn waiting_for_agents_does_not_use_cpu_time() {
    let result = block_on(async {
        let mut run = start("return await agent(\"slow\")", cpu_limit(50));
        loop {
            match run.next().await {
                Some(Event::Agent(call)) => {
                    std::thread::sleep(Duration::from_millis(150));
                    run.settle(call.id, json!("late"));
                }
                Some(Event::Finished(result)) => break result,
                Some(_) => {}
                None => panic!("no Finished"),
            }
        }
    });
    assert_eq!(result, Ok(json!("late")));
}

#[test]
fn memory_exhaustion_is_reported() {
    let limits = Limits {
        memory_bytes: 8 * 1024 * 1024,
        ..Limits::default()
    };
    let outcome = run_full(
        "let a = []; while (true) a.push(\"x\".repeat(1e6));",
        json!({}),
        limits,
        |_| Value::Null,
    );
    assert_eq!(
        outcome.result,
        Err(RunError::Memory {
            limit_bytes: 8 * 1024 * 1024
        })
    );
    assert_eq!(
        outcome.result.unwrap_err().to_string(),
        "workflow run failed: the script ran out of memory (limit 8388608 bytes, DSH_WORKFLOW_MEMORY_BYTES)"
    );
}

#[test]
fn deep_recursion_is_a_script_error() {
    let err = failure("function down(n) { return down(n + 1) + 1; }\nreturn down(0);");
    assert!(
        err.starts_with("workflow run failed: RangeError: Maximum call stack size exceeded\n    at workflow:wf:1:"),
        "{err}"
    );
    // The script can catch it and go on.
    assert_eq!(
        run(
            "function down(n) { return down(n + 1) + 1; }\ntry { down(0) } catch (e) { return e.name }"
        ),
        Ok(json!("RangeError"))
    );
}

#[test]
fn cancel_while_waiting_for_an_agent() {
    let (result, calls) = block_on(async {
        let mut run = start(
            "await agent(\"one\");\nawait agent(\"two\");",
            Limits::default(),
        );
        let mut calls = 0;
        loop {
            match run.next().await {
                Some(Event::Agent(_)) => {
                    calls += 1;
                    run.cancel();
                }
                Some(Event::Finished(result)) => break (result, calls),
                Some(_) => {}
                None => panic!("no Finished"),
            }
        }
    });
    assert_eq!(result, Err(RunError::Cancelled));
    assert_eq!(calls, 1);
    assert_eq!(RunError::Cancelled.to_string(), "workflow run cancelled");
}

#[test]
fn cancel_stops_a_busy_script_and_drop_does_not_block() {
    let result = block_on(async {
        let mut run = start("while (true) {}", cpu_limit(60_000));
        assert_eq!(run.next().await, Some(Event::Started));
        run.cancel();
        let result = run.next().await;
        assert_eq!(run.next().await, None);
        result
    });
    assert_eq!(result, Some(Event::Finished(Err(RunError::Cancelled))));
    let started = Instant::now();
    drop(start("while (true) {}", cpu_limit(60_000)));
    assert!(started.elapsed() < Duration::from_millis(500));
}

#[test]
fn a_promise_that_never_settles_fails() {
    let err = failure("await new Promise(() => {});");
    assert!(
        err.starts_with("workflow run failed: WorkflowError: the script is waiting on nothing"),
        "{err}"
    );
}

#[test]
fn unknown_settles_are_ignored() {
    let result = block_on(async {
        let mut run = start("return await agent(\"x\")", Limits::default());
        loop {
            match run.next().await {
                Some(Event::Agent(call)) => {
                    run.settle(99, json!("wrong"));
                    run.settle(call.id, json!("right"));
                    run.settle(call.id, json!("again"));
                }
                Some(Event::Finished(result)) => break result,
                Some(_) => {}
                None => panic!("no Finished"),
            }
        }
    });
    assert_eq!(result, Ok(json!("right")));
}

#[test]
fn agent_calls_are_limited() {
    let limits = Limits {
        max_agents: 2,
        ..Limits::default()
    };
    let outcome = run_full(
        "for (let i = 0; i < 3; i++) await agent(\"task \" + i);",
        json!({}),
        limits,
        |_| Value::Null,
    );
    assert_eq!(outcome.calls.len(), 2);
    let err = outcome.result.unwrap_err().to_string();
    assert!(
        err.starts_with("workflow run failed: WorkflowError: agent() was called more than 2 times"),
        "{err}"
    );
    assert!(err.contains("DSH_WORKFLOW_MAX_AGENTS"), "{err}");
}

#[test]
fn agent_arguments_are_checked() {
    assert!(
        failure("await agent()")
            .contains("WorkflowError: agent() requires a non-empty prompt string")
    );
    assert!(failure("await agent(5)").contains("agent() requires a non-empty prompt string"));
    assert_eq!(
        failure("await agent(\"x\", {foo: 1})"),
        "workflow run failed: WorkflowError: agent() option \"foo\" is not recognized (supported: label, phase, schema, provider, model)\n    at workflow:wf:1:7"
    );
    assert!(
        failure("await agent(\"x\", {label: 3})")
            .contains("agent() option \"label\" must be a string, not a number")
    );
    assert!(
        failure("await agent(\"x\", {model: {}})")
            .contains("agent() option \"model\" must be a string")
    );
    assert!(
        failure("await agent(\"x\", {schema: \"object\"})")
            .contains("agent() option \"schema\" must be a JSON schema object")
    );
    assert!(failure("await agent(\"x\", [1])").contains("agent() options must be an object"));
    // The error is catchable by the script.
    assert_eq!(
        run("try { agent(\"\") } catch (e) { return [e.name, e instanceof Error] }"),
        Ok(json!(["WorkflowError", true]))
    );
}

#[test]
fn log_lines_and_their_bounds() {
    let outcome = run_full(
        "log(\"text\", 1, {x: [1]}, null, undefined, 10n);\n\
         console.log(\"c\"); console.info(\"i\"); console.warn(\"w\"); console.error(\"e\"); console.debug(\"d\");\n\
         const o = {}; o.o = o; log(o);\n\
         log(\"y\".repeat(10000));",
        json!({}),
        Limits::default(),
        |_| Value::Null,
    );
    assert_eq!(outcome.result, Ok(Value::Null));
    assert_eq!(outcome.logs[0], "text 1 {\"x\":[1]} null undefined 10");
    assert_eq!(&outcome.logs[1..6], ["c", "i", "w", "e", "d"]);
    assert_eq!(outcome.logs[6], "[object Object]");
    assert!(outcome.logs[7].len() <= Limits::MAX_LOG_LINE_BYTES);
    assert!(outcome.logs[7].ends_with("[line cut at 4096 bytes]"));

    let limits = Limits {
        max_log_bytes: 100,
        ..Limits::default()
    };
    let outcome = run_full(
        "for (let i = 0; i < 50; i++) log(\"line \" + i);",
        json!({}),
        limits,
        |_| Value::Null,
    );
    let last = outcome.logs.last().unwrap();
    assert!(last.contains("log limit of 100 bytes reached"), "{last}");
    assert_eq!(
        outcome
            .logs
            .iter()
            .filter(|l| l.contains("log limit"))
            .count(),
        1
    );
    assert_eq!(outcome.logs[0], "line 0");
    let kept: usize = outcome.logs[..outcome.logs.len() - 1]
        .iter()
        .map(String::len)
        .sum();
    assert!(kept <= 100);
}

#[test]
fn error_texts() {
    assert_eq!(
        RunError::Parse("x".into()).to_string(),
        "workflow script does not parse: x"
    );
    assert_eq!(
        RunError::Failed("x".into()).to_string(),
        "workflow run failed: x"
    );
    assert_eq!(
        RunError::Engine("x".into()).to_string(),
        "workflow engine failed: x"
    );
    assert!(RunError::Parse(String::new()).is_parse());
    assert!(!RunError::Cancelled.is_parse());
}

#[test]
fn hostile_shapes_end_cleanly() {
    // Nesting deeper than the result walk accepts.
    let err = failure("let o = 1; for (let i = 0; i < 10000; i++) o = {o}; return o");
    assert!(err.contains("nested more than 500 levels"), "{err}");
    // A huge array fails on size before it is copied.
    let err = failure("return new Array(1e6).fill(0)");
    assert!(err.contains("larger than the limit"), "{err}");
    // A parser recursion bomb is a parse error, not a crash.
    let err = run(&format!(
        "return {}1{}",
        "[".repeat(100_000),
        "]".repeat(100_000)
    ))
    .unwrap_err();
    assert!(err.is_parse(), "{err}");
    // Closing the wrapper early only changes what runs, in the same sandbox.
    assert!(run("}); (async function () {").is_ok());
    // A throwing getter in the result.
    assert_eq!(
        failure("return {get x() { throw new Error(\"getter\") }}"),
        "workflow run failed: Error: getter\n    at workflow:wf:1:29"
    );
}

#[test]
fn the_smallest_memory_limit_runs_a_script() {
    let limits = Limits {
        memory_bytes: Limits::MIN_MEMORY_BYTES,
        ..Limits::default()
    };
    let outcome = run_full(
        "const r = await agent(\"x\"); return {r, n: [1, 2, 3].map((n) => n * 2)}",
        json!({}),
        limits,
        |_| json!("ok"),
    );
    assert_eq!(outcome.result, Ok(json!({"r": "ok", "n": [2, 4, 6]})));
}

#[test]
fn runs_can_move_between_tasks() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Run>();
    assert_send_sync::<Event>();
}

#[test]
fn math_runs_on_the_glibc_the_wheel_promises() {
    // `Math.hypot` goes through the compatibility shim (compat/hypot.c).
    assert_eq!(
        run("return [Math.hypot(3, 4), Math.hypot(), Math.hypot(-5, 12, 0)];"),
        Ok(json!([5, 0, 13]))
    );
}
