//! The CPU time a runtime has used (shared by the benches that include it
//! with `#[path = "support/cpu.rs"] mod cpu;`, beside `runtime`).

use crate::runtime::Runtime;
use std::time::Duration;

/// CPU time of every thread of `runtime` so far, from
/// `/proc/<pid>/task/*/schedstat`.
pub fn cpu(runtime: &Runtime) -> Duration {
    let tasks = format!("/proc/{}/task", runtime.child.id());
    let nanos: u64 = std::fs::read_dir(tasks)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
                .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0);
    Duration::from_nanos(nanos)
}
