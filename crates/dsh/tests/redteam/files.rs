//! Attacks 1 and 2 through the file tools: links that lead out of the
//! workspace, planted in advance or swapped in while the tool runs.

use crate::harness::{Attack, Level, Outcome, assert_fails_closed, bash, call, level, outside};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

fn write(path: &str, content: &str) -> serde_json::Value {
    call("write", json!({"file_path": path, "content": content}))
}

/// Attack 1: `write` to a dangling link pointing outside creates nothing
/// outside; `edit` through a link to an outside file changes nothing.
#[test]
fn file_tools_never_follow_a_link_out() {
    let out = outside();
    let mut attack = Attack::start("workspace-write", &[]);
    let ws = attack.workspace();
    let target = out.path().join("created");
    let existing = out.path().join("existing");
    std::fs::write(&existing, "original\n").unwrap();
    std::os::unix::fs::symlink(&target, ws.join("dangling")).unwrap();
    std::os::unix::fs::symlink(out.path(), ws.join("dir")).unwrap();
    std::os::unix::fs::symlink(&existing, ws.join("file")).unwrap();
    let results = attack.run(&[
        write("dangling", "pwned"),
        write("dir/new", "pwned"),
        call("read", json!({"file_path": "file"})),
        call(
            "edit",
            json!({"file_path": "file", "old_string": "original", "new_string": "pwned"}),
        ),
        write("inside/ok.txt", "fine"),
    ]);
    for (i, result) in results.iter().enumerate() {
        if i == 2 || i == 4 {
            assert!(!result.is_error, "{}", result.text);
        } else {
            assert!(result.is_error, "{}", result.text);
            // Links are followed first, as officially: a dangling one is
            // not a regular file, one leading out is the sandbox's refusal.
            assert!(
                result.text.contains("not a regular file")
                    || result.text.contains("[sandbox: file access denied"),
                "{}",
                result.text
            );
        }
    }
    assert!(!target.exists());
    assert!(!out.path().join("new").exists());
    assert_eq!(
        std::fs::read_to_string(&existing).unwrap_or_default(),
        "original\n"
    );
    assert_eq!(
        std::fs::read_to_string(ws.join("inside/ok.txt")).unwrap_or_default(),
        "fine"
    );
}

/// Attack 2: a background job swaps a workspace directory for a link to an
/// outside directory in a loop while the model writes into it: every
/// write lands inside or is refused, none outside.
///
/// The test shows the race was run, not only that nothing leaked: the loop
/// counts its swaps (one byte appended to `swaps` per round); the model
/// waits for the first swap before its first write and reads the count
/// again after its last, so swaps happened between them; and some writes
/// landed inside (found there) while others were refused (the link in
/// place, or `d` moved away), so both sides of the race were hit.
///
/// Below Landlock ABI 3 commands are refused (the swap loop's too), but
/// the file tools' guarantee does not rest on Landlock: there this process
/// swaps the directory the same way.
#[test]
fn a_swapped_directory_never_leads_a_write_outside() {
    const WRITES: usize = 400;
    let out = outside();
    let mut attack = Attack::start("workspace-write", &[]);
    let ws = attack.workspace();
    std::fs::create_dir_all(ws.join("d")).unwrap();
    // Stops at `stop` (or after 60 s, should the model never get there).
    let swap = format!(
        "end=$((SECONDS+60)); while [ ! -e stop ] && [ $SECONDS -lt $end ]; do \
         mv d d.real; ln -s '{}' d; sleep 0.005; rm d; mv d.real d; printf x >> swaps; sleep 0.005; done; \
         touch stopped",
        out.path().display()
    );
    let mut calls = vec![
        call(
            "bash",
            json!({"command": swap, "description": "swap", "run_in_background": true}),
        ),
        bash("for i in $(seq 300); do [ -s swaps ] && break; sleep 0.01; done; wc -c < swaps"),
    ];
    calls.extend((0..WRITES).map(|i| write(&format!("d/f{i}"), "x")));
    calls.push(bash("wc -c < swaps; touch stop"));
    let swapper = (level() == Level::FailsClosed).then(|| Swapper::start(&ws, out.path()));
    let swapped_before = swapper.as_ref().map(Swapper::first_rounds);
    let results = attack.run(&calls);
    let (before, after) = match (swapper, swapped_before) {
        (Some(swapper), Some(before)) => {
            for i in [0, 1, WRITES + 2] {
                assert_fails_closed(&results[i], "workspace-write");
            }
            (before, swapper.stop())
        }
        _ => {
            assert!(results[0].text.contains("job"), "{}", results[0].text);
            let count = |outcome: &Outcome| -> usize {
                assert!(!outcome.is_error, "{}", outcome.text);
                outcome
                    .text
                    .trim()
                    .parse()
                    .unwrap_or_else(|e| panic!("{e}: {}", outcome.text))
            };
            // The loop may be mid-round when `stop` appears: the files are
            // listed once it has ended (it says so), not while it renames.
            let stopped = ws.join("stopped");
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
            while !stopped.exists() && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            assert!(stopped.exists(), "the swap loop did not end");
            (count(&results[1]), count(&results[WRITES + 2]))
        }
    };
    let writes = &results[2..WRITES + 2];
    let landed: Vec<usize> = (0..WRITES).filter(|&i| !writes[i].is_error).collect();
    let refused: Vec<&str> = writes
        .iter()
        .filter(|r| r.is_error)
        .map(|r| r.text.as_str())
        .collect();
    let leaked: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(leaked.is_empty(), "written outside: {leaked:?}");
    eprintln!(
        "{} of {WRITES} writes landed inside, {} refused, {} swaps during the writes ({before} before)",
        landed.len(),
        refused.len(),
        after.saturating_sub(before)
    );
    // The loop ran before the first write and between the first and the last.
    assert!(
        before > 0 && after > before,
        "swaps: {before} before the writes, {after} after"
    );
    // Both sides of the race were hit: without the swaps no write into the
    // plain directory `d` fails, so every refusal is one the swaps caused
    // (the link in place, or `d` moved away mid-call).
    let mut reasons = refused.clone();
    reasons.sort_unstable();
    reasons.dedup();
    assert!(
        !landed.is_empty() && !refused.is_empty(),
        "{} landed, {} refused: {reasons:?}",
        landed.len(),
        refused.len()
    );
    // Every write that succeeded is inside (wherever the swaps moved `d`).
    let inside = files_named_under(&ws);
    for i in landed {
        assert!(
            inside.contains(&format!("f{i}")),
            "d/f{i} reported written but not inside"
        );
    }
}

/// The swap loop of [`a_swapped_directory_never_leads_a_write_outside`]
/// run by this process, for the level at which commands are refused.
struct Swapper {
    rounds: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl Swapper {
    /// Swaps `ws/d` with a link to `outside` (5 ms each way) until stopped.
    fn start(ws: &std::path::Path, outside: &std::path::Path) -> Self {
        let rounds = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (d, real, outside) = (ws.join("d"), ws.join("d.real"), outside.to_path_buf());
        let (count, stopped) = (rounds.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let pause = std::time::Duration::from_millis(5);
            while !stopped.load(Ordering::SeqCst) {
                let linked = std::fs::rename(&d, &real)
                    .and_then(|()| std::os::unix::fs::symlink(&outside, &d));
                std::thread::sleep(pause);
                let back = std::fs::remove_file(&d).and_then(|()| std::fs::rename(&real, &d));
                if linked.is_ok() && back.is_ok() {
                    count.fetch_add(1, Ordering::SeqCst);
                }
                std::thread::sleep(pause);
            }
        });
        Self {
            rounds,
            stop,
            thread,
        }
    }

    /// Waits for the first round (at most 10 s); the rounds so far.
    fn first_rounds(&self) -> usize {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while self.rounds.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        self.rounds.load(Ordering::SeqCst)
    }

    /// Stops the loop; the rounds it made.
    fn stop(self) -> usize {
        self.stop.store(true, Ordering::SeqCst);
        if self.thread.join().is_err() {
            panic!("the swap loop panicked");
        }
        self.rounds.load(Ordering::SeqCst)
    }
}

/// The names of the regular files under `dir` (links not followed).
fn files_named_under(dir: &std::path::Path) -> std::collections::HashSet<String> {
    let mut names = std::collections::HashSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                names.insert(entry.file_name().to_string_lossy().into_owned());
            }
        }
    }
    names
}
