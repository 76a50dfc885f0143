//! Attacks 1 and 2 through the file tools: links that lead out of the
//! workspace, planted in advance or swapped in while the tool runs.

use crate::harness::{Attack, call, outside};
use serde_json::json;

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
            assert!(
                result.text.contains("symbolic link")
                    || result.text.contains("outside the workspace"),
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
#[test]
fn a_swapped_directory_never_leads_a_write_outside() {
    let out = outside();
    let mut attack = Attack::start("workspace-write", &[]);
    std::fs::create_dir_all(attack.workspace().join("d")).unwrap();
    let swap = format!(
        "end=$((SECONDS+4)); while [ $SECONDS -lt $end ]; do mv d d.real; ln -s '{}' d; rm d; mv d.real d; done",
        out.path().display()
    );
    let mut calls = vec![call(
        "bash",
        json!({"command": swap, "description": "swap", "run_in_background": true}),
    )];
    calls.extend((0..40).map(|i| write(&format!("d/f{i}"), "x")));
    let results = attack.run(&calls);
    assert!(results[0].text.contains("job"), "{}", results[0].text);
    let landed = results[1..].iter().filter(|r| !r.is_error).count();
    let leaked: Vec<_> = std::fs::read_dir(out.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert!(leaked.is_empty(), "written outside: {leaked:?}");
    eprintln!("{landed} of 40 writes landed inside during the swap loop");
}
