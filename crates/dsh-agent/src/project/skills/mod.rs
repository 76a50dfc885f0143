//! Skills: the catalog sent to the model (`skill-catalog` user messages)
//! and the `skill` tool that loads one.
//!
//! The first catalog goes out at the first step that finds a skill; a
//! replacing one (`update: true`) whenever the set of names changes (a
//! changed description alone is not sent again).

mod front_matter;
mod scan;
mod tool;

pub(crate) use tool::{run as run_skill, spec as skill_spec};

use crate::project::prose;
use dsh_session::{UserMessage, text_block};
use scan::Skill;
use serde_json::{Value, json};
use std::path::Path;

/// `source.kind` of a catalog message.
const KIND: &str = "skill-catalog";

/// What one agent has sent of the skill catalog.
#[derive(Default)]
pub(crate) struct Tracker {
    /// The names of the last catalog sent, if one was.
    sent: Option<Vec<String>>,
    cache: scan::Cache,
}

impl Tracker {
    /// Takes in a catalog message the model already has (in history
    /// order).
    pub(crate) fn restore(&mut self, message: &UserMessage) {
        if message.source_kind() != Some(KIND) {
            return;
        }
        let entries = message.source.get("entries").and_then(Value::as_array);
        let names = entries
            .into_iter()
            .flatten()
            .filter_map(|entry| entry.get("name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        self.sent = Some(names);
    }

    /// The catalog message of a step in `cwd`, if the catalog is new or
    /// changed.
    pub(crate) fn step(&mut self, cwd: &Path, home: Option<&Path>) -> Option<UserMessage> {
        let skills = self.cache.scan(&scan::roots(cwd, home));
        let names: Vec<String> = skills.iter().map(|s| s.name.clone()).collect();
        let update = match &self.sent {
            None if names.is_empty() => return None,
            None => false,
            Some(sent) if *sent == names => return None,
            Some(_) => true,
        };
        self.sent = Some(names);
        Some(catalog(&skills, update))
    }
}

/// The catalog message listing `skills`.
fn catalog(skills: &[Skill], update: bool) -> UserMessage {
    let mut text = String::from(prose::OPEN);
    text.push_str(if update {
        prose::CATALOG_UPDATE_INTRO
    } else {
        prose::CATALOG_INTRO
    });
    text.push_str("\n\n<available_skills>\n");
    for skill in skills {
        text.push_str(&format!("- `{}`: {}\n", skill.name, skill.description));
    }
    text.push_str("</available_skills>\n\n");
    text.push_str(match (update, skills.is_empty()) {
        (_, true) => prose::CATALOG_EMPTY_GUIDANCE,
        (true, false) => prose::CATALOG_UPDATE_GUIDANCE,
        (false, false) => prose::CATALOG_GUIDANCE,
    });
    text.push_str(prose::CLOSE);
    let entries: Vec<Value> = skills
        .iter()
        .map(|s| json!({"name": s.name, "description": s.description}))
        .collect();
    let source = if update {
        json!({"kind": KIND, "form": "catalog", "update": true, "entries": entries})
    } else {
        json!({"kind": KIND, "form": "catalog", "entries": entries})
    };
    UserMessage::new(vec![text_block(text)], source)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str) {
        let dir = dir.join(".dsh/skills").join(name);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("SKILL.md"),
            format!("---\nname: {name}\ndescription: About {name}.\n---\nbody\n"),
        )
        .unwrap();
    }

    #[test]
    fn the_catalog_is_sent_when_it_appears_and_when_its_names_change() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path();
        let mut tracker = Tracker::default();
        assert!(tracker.step(ws, None).is_none(), "no skills, no message");
        write(ws, "alpha");
        let first = tracker.step(ws, None).unwrap();
        assert_eq!(
            serde_json::to_string(&first.source).unwrap(),
            r#"{"kind":"skill-catalog","form":"catalog","entries":[{"name":"alpha","description":"About alpha."}]}"#
        );
        let text = first.content[0]["text"].as_str().unwrap();
        assert!(text.starts_with("<system-reminder>\n") && text.ends_with("\n</system-reminder>"));
        assert!(
            text.contains(
                "\n\n<available_skills>\n- `alpha`: About alpha.\n</available_skills>\n\n"
            )
        );
        assert!(tracker.step(ws, None).is_none());
        write(ws, "beta");
        let update = tracker.step(ws, None).unwrap();
        assert_eq!(update.source["update"], true);
        assert_eq!(update.source["entries"].as_array().unwrap().len(), 2);
        std::fs::remove_dir_all(ws.join(".dsh")).unwrap();
        let empty = tracker.step(ws, None).unwrap();
        assert_eq!(empty.source["entries"], json!([]));
        assert!(
            empty.content[0]["text"]
                .as_str()
                .unwrap()
                .contains("<available_skills>\n</available_skills>")
        );
        // A resumed agent does not send what the model has.
        let mut resumed = Tracker::default();
        resumed.restore(&update);
        write(ws, "alpha");
        write(ws, "beta");
        assert!(resumed.step(ws, None).is_none());
    }
}
