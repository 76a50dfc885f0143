use super::*;
use std::path::PathBuf;

fn project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join(".git")).unwrap();
    std::fs::create_dir_all(dir.path().join("sub")).unwrap();
    let sub = dir.path().join("sub");
    (dir, sub)
}

fn changes(message: &UserMessage) -> Vec<(String, String)> {
    message.source["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["action"].as_str().unwrap().to_owned(),
                c["path"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, p)| ((*a).to_owned(), (*p).to_owned()))
        .collect()
}

fn text(message: &UserMessage) -> &str {
    message.content[0]["text"].as_str().unwrap()
}

#[test]
fn a_baseline_then_only_what_changed() {
    let (dir, sub) = project();
    let root = dir.path();
    std::fs::write(root.join("AGENTS.md"), "root\n").unwrap();
    std::fs::write(sub.join("CLAUDE.md"), "sub\n").unwrap();
    std::fs::write(sub.join("AGENTS.local.md"), "local\n").unwrap();
    let mut tracker = Tracker::default();
    let baseline = tracker.step(&sub).unwrap();
    assert_eq!(
        serde_json::to_string(&baseline.source).unwrap(),
        format!(
            "{{\"kind\":\"agent-instructions\",\"form\":\"instructions\",\"baseline\":true,\"baselineIdentity\":{},\"changes\":[{{\"action\":\"set\",\"scope\":\".\\u0000AGENTS.md\",\"path\":\"AGENTS.md\",\"digest\":\"{}\"}},{{\"action\":\"set\",\"scope\":\"sub\\u0000CLAUDE.md\",\"path\":\"sub/CLAUDE.md\",\"digest\":\"{}\"}},{{\"action\":\"set\",\"scope\":\"sub\\u0000AGENTS.local.md\",\"path\":\"sub/AGENTS.local.md\",\"digest\":\"{}\"}}]}}",
            serde_json::to_string(r#"{"projectRoot":"..","projectRootMarkers":[".git"],"maxBytes":65536,"maxSourceBytes":1048576,"instructionFileCandidates":["AGENTS.md","CLAUDE.md"],"localInstructionFileCandidates":["AGENTS.local.md","CLAUDE.local.md"]}"#).unwrap(),
            discover::digest(b"root\n"),
            discover::digest(b"sub\n"),
            discover::digest(b"local\n"),
        )
    );
    assert!(text(&baseline).contains("Instructions file: sub/CLAUDE.md\n\nsub\n"));
    assert!(tracker.step(&sub).is_none(), "nothing changed");
    std::fs::write(root.join("AGENTS.md"), "root v2\n").unwrap();
    std::fs::remove_file(sub.join("AGENTS.local.md")).unwrap();
    std::fs::write(root.join("CLAUDE.md"), "new\n").unwrap();
    let update = tracker.step(&sub).unwrap();
    assert_eq!(update.source.get("baseline"), None);
    assert_eq!(
        changes(&update),
        pairs(&[
            ("replace", "AGENTS.md"),
            ("set", "CLAUDE.md"),
            ("remove", "sub/AGENTS.local.md")
        ])
    );
    assert!(update.source["changes"][2].get("digest").is_none());
    assert!(tracker.step(&sub).is_none());
}

#[test]
fn no_files_no_message_and_a_later_file_gets_the_baseline() {
    let (dir, sub) = project();
    let mut tracker = Tracker::default();
    assert!(tracker.step(&sub).is_none());
    std::fs::write(dir.path().join("AGENTS.md"), "x").unwrap();
    let message = tracker.step(&sub).unwrap();
    assert_eq!(message.source["baseline"], true);
}

#[test]
fn moving_to_another_level_sends_a_replacing_baseline() {
    let (dir, sub) = project();
    std::fs::write(dir.path().join("AGENTS.md"), "root").unwrap();
    std::fs::write(sub.join("AGENTS.md"), "sub").unwrap();
    let mut tracker = Tracker::default();
    let first = tracker.step(dir.path()).unwrap();
    assert_eq!(changes(&first), pairs(&[("set", "AGENTS.md")]));
    let second = tracker.step(&sub).unwrap();
    assert_eq!(second.source["baseline"], true);
    assert_eq!(
        changes(&second),
        pairs(&[("set", "AGENTS.md"), ("set", "sub/AGENTS.md")])
    );
    assert!(text(&second).contains(prose_replace()));
}

fn prose_replace() -> &'static str {
    crate::project::prose::INSTRUCTIONS_REPLACE
}

#[test]
fn a_file_left_out_for_the_budget_stays_out_even_after_a_resume() {
    let (dir, sub) = project();
    std::fs::write(dir.path().join("AGENTS.md"), "a".repeat(40_000)).unwrap();
    std::fs::write(sub.join("AGENTS.md"), "b".repeat(40_000)).unwrap();
    let mut tracker = Tracker::default();
    let baseline = tracker.step(&sub).unwrap();
    assert_eq!(changes(&baseline), pairs(&[("set", "sub/AGENTS.md")]));
    assert!(text(&baseline).contains("left out AGENTS.md"));
    std::fs::write(dir.path().join("AGENTS.md"), "small now").unwrap();
    assert!(
        tracker.step(&sub).is_none(),
        "a left-out file is not sent when it changes"
    );
    // A resumed agent rebuilds what was sent from the history.
    std::fs::write(dir.path().join("AGENTS.md"), "a".repeat(40_000)).unwrap();
    let mut resumed = Tracker::default();
    resumed.restore(&baseline);
    resumed.finish_restore();
    assert!(resumed.step(&sub).is_none());
    // What fits now is sent after a resume.
    std::fs::write(dir.path().join("AGENTS.md"), "small").unwrap();
    let mut resumed = Tracker::default();
    resumed.restore(&baseline);
    resumed.finish_restore();
    assert_eq!(
        changes(&resumed.step(&sub).unwrap()),
        pairs(&[("set", "AGENTS.md")])
    );
}

#[test]
fn a_restored_tracker_sends_only_what_changed_meanwhile() {
    let (dir, sub) = project();
    std::fs::write(dir.path().join("AGENTS.md"), "v1").unwrap();
    std::fs::write(dir.path().join("CLAUDE.md"), "c1").unwrap();
    let mut tracker = Tracker::default();
    let baseline = tracker.step(&sub).unwrap();
    std::fs::write(dir.path().join("AGENTS.md"), "v2").unwrap();
    let update = tracker.step(&sub).unwrap();
    let mut resumed = Tracker::default();
    resumed.restore(&baseline);
    resumed.restore(&update);
    resumed.finish_restore();
    assert!(resumed.step(&sub).is_none());
    std::fs::remove_file(dir.path().join("CLAUDE.md")).unwrap();
    assert_eq!(
        changes(&resumed.step(&sub).unwrap()),
        pairs(&[("remove", "CLAUDE.md")])
    );
}
