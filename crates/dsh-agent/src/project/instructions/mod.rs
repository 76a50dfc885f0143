//! Project instructions: `AGENTS.md`, `CLAUDE.md` and their `.local.md`
//! variants in every directory from the project root down to the working
//! directory, sent as `agent-instructions` user messages.
//!
//! The first message is a baseline (`baseline: true` and the
//! `baselineIdentity` of the settings it was made with) holding every file;
//! later ones carry what changed (`set` for a new file, `replace` for a
//! changed one, `remove` for a deleted one). A new baseline replaces the
//! old one when the identity changes (the working directory moved to
//! another level of the project). A file left out for the byte budget is
//! not sent later either, until the next baseline.

mod compose;
mod discover;

use crate::project::root::{self, MARKERS};
use compose::{Action, Body, Change, Frame, MAX_BYTES, compose};
use discover::{CANDIDATES, Cache, Found, LOCAL_CANDIDATES, MAX_SOURCE_BYTES};
use dsh_session::{UserMessage, text_block};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// `source.kind` of an instructions message.
const KIND: &str = "agent-instructions";

/// `source.form` of an instructions message.
const FORM: &str = "instructions";

/// A file the model has: its path and digest.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sent {
    path: String,
    digest: String,
}

/// What one agent has sent of its project's instructions.
#[derive(Default)]
pub(crate) struct Tracker {
    /// The `baselineIdentity` of the last baseline, if one was sent.
    identity: Option<String>,
    /// The files the model has, by scope.
    sent: BTreeMap<String, Sent>,
    /// Scopes left out for the budget since the last baseline.
    ignored: HashSet<String>,
    /// Rebuilt from a history: the files the budget leaves out are found
    /// again (silently) at the first step.
    restored: bool,
    cache: Cache,
}

/// The `baselineIdentity` of a baseline made with `projectRoot` (the root
/// as seen from the working directory).
fn identity(project_root: &str) -> String {
    json!({
        "projectRoot": project_root,
        "projectRootMarkers": MARKERS,
        "maxBytes": MAX_BYTES,
        "maxSourceBytes": MAX_SOURCE_BYTES,
        "instructionFileCandidates": CANDIDATES,
        "localInstructionFileCandidates": LOCAL_CANDIDATES,
    })
    .to_string()
}

impl Tracker {
    /// Takes in an instructions message the model already has (in history
    /// order).
    pub(crate) fn restore(&mut self, message: &UserMessage) {
        let source = &message.source;
        if message.source_kind() != Some(KIND) {
            return;
        }
        if source.get("baseline") == Some(&Value::Bool(true)) {
            self.identity = source
                .get("baselineIdentity")
                .and_then(Value::as_str)
                .map(str::to_owned);
            self.sent.clear();
        }
        let changes = source.get("changes").and_then(Value::as_array);
        for change in changes.into_iter().flatten() {
            let text = |key| change.get(key).and_then(Value::as_str);
            let (Some(action), Some(scope), Some(path)) =
                (text("action"), text("scope"), text("path"))
            else {
                continue;
            };
            match (action, text("digest")) {
                ("set" | "replace", Some(digest)) => {
                    self.sent.insert(
                        scope.to_owned(),
                        Sent {
                            path: path.to_owned(),
                            digest: digest.to_owned(),
                        },
                    );
                }
                ("remove", _) => {
                    self.sent.remove(scope);
                }
                _ => {}
            }
        }
    }

    /// Ends a restore: what the budget leaves out is worked out at the
    /// next step.
    pub(crate) fn finish_restore(&mut self) {
        self.restored = self.identity.is_some();
    }

    /// The message of a step in `cwd`, if there is anything to tell.
    pub(crate) fn step(&mut self, cwd: &Path) -> Option<UserMessage> {
        let project = root::locate(cwd);
        let identity = identity(&project.relative_root());
        let found = self.cache.discover(&project);
        if self.identity.as_deref() != Some(identity.as_str()) {
            return self.baseline(identity, &found);
        }
        if std::mem::take(&mut self.restored) {
            self.ignore_what_a_baseline_leaves_out(&found);
        }
        self.ignored
            .retain(|scope| found.iter().any(|f| f.scope == *scope));
        let mut changes = Vec::new();
        for file in &found {
            if self.ignored.contains(&file.scope) {
                continue;
            }
            let action = match self.sent.get(&file.scope) {
                None => Action::Set,
                Some(sent) if sent.digest != file.digest => Action::Replace,
                Some(_) => continue,
            };
            if let Some(change) = self.change(file, action) {
                changes.push(change);
            }
        }
        for (scope, sent) in &self.sent {
            if !found.iter().any(|f| f.scope == *scope) {
                changes.push(removal(scope, sent));
            }
        }
        changes.sort_by(|a, b| discover::order(&a.scope).cmp(&discover::order(&b.scope)));
        self.update(changes)
    }

    /// A baseline of `found` made with `identity`, replacing whatever was
    /// sent; with nothing found, the files sent before are removed.
    fn baseline(&mut self, identity: String, found: &[Found]) -> Option<UserMessage> {
        self.restored = false;
        self.ignored.clear();
        let mut changes: Vec<Change> = found
            .iter()
            .filter_map(|file| self.change(file, Action::Set))
            .collect();
        if changes.is_empty() {
            if self.identity.is_some() {
                self.identity = Some(identity);
            }
            let removals = self
                .sent
                .iter()
                .map(|(scope, sent)| removal(scope, sent))
                .collect();
            return self.update(removals);
        }
        let replaces = self.identity.is_some();
        let composed = compose(Frame::Baseline { replaces }, &mut changes);
        self.sent.clear();
        let carried = self.apply(changes, &composed.included);
        let source = json!({
            "kind": KIND,
            "form": FORM,
            "baseline": true,
            "baselineIdentity": identity,
            "changes": carried,
        });
        self.identity = Some(identity);
        Some(UserMessage::new(vec![text_block(composed.text)], source))
    }

    /// An update carrying `changes` (in message order), if any.
    fn update(&mut self, mut changes: Vec<Change>) -> Option<UserMessage> {
        if changes.is_empty() {
            return None;
        }
        let composed = compose(Frame::Update, &mut changes);
        let carried = self.apply(changes, &composed.included);
        let source = json!({"kind": KIND, "form": FORM, "changes": carried});
        Some(UserMessage::new(vec![text_block(composed.text)], source))
    }

    /// Records what a message carries (and what it left out); returns the
    /// `changes` entries of its source.
    fn apply(&mut self, changes: Vec<Change>, included: &[bool]) -> Vec<Value> {
        let mut carried = Vec::new();
        for (change, &taken) in changes.into_iter().zip(included) {
            if !taken {
                self.sent.remove(&change.scope);
                self.ignored.insert(change.scope);
                continue;
            }
            let mut entry = json!({
                "action": change.action.as_str(),
                "scope": change.scope,
                "path": change.path,
            });
            match (&change.digest, entry.as_object_mut()) {
                (Some(digest), Some(map)) => {
                    map.insert("digest".into(), Value::from(digest.as_str()));
                    self.sent.insert(
                        change.scope,
                        Sent {
                            path: change.path,
                            digest: digest.clone(),
                        },
                    );
                }
                _ => {
                    self.sent.remove(&change.scope);
                }
            }
            carried.push(entry);
        }
        carried
    }

    /// After a restore: the files a baseline of `found` would leave out for
    /// the budget, and that the model does not have, are not sent.
    fn ignore_what_a_baseline_leaves_out(&mut self, found: &[Found]) {
        let mut changes: Vec<Change> = found
            .iter()
            .filter_map(|file| self.change(file, Action::Set))
            .collect();
        let composed = compose(Frame::Baseline { replaces: false }, &mut changes);
        for (change, taken) in changes.into_iter().zip(composed.included) {
            if !taken && !self.sent.contains_key(&change.scope) {
                self.ignored.insert(change.scope);
            }
        }
    }

    /// The change `action` of `file`, with its content read now (`None`
    /// if it cannot be read any more).
    fn change(&mut self, file: &Found, action: Action) -> Option<Change> {
        let bytes = self.cache.read(&file.file)?;
        let digest = discover::digest(&bytes);
        let size = bytes.len() as u64;
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if text.len() > MAX_BYTES {
            let mut cut = MAX_BYTES;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            text.truncate(cut);
        }
        Some(Change {
            action,
            scope: file.scope.clone(),
            path: file.path.clone(),
            dir: file.dir.clone(),
            digest: Some(digest),
            body: Some(Body { text, size }),
        })
    }
}

/// The removal of the file sent as `sent` under `scope`.
fn removal(scope: &str, sent: &Sent) -> Change {
    let dir = scope.split_once('\0').map_or(".", |(dir, _)| dir);
    Change {
        action: Action::Remove,
        scope: scope.to_owned(),
        path: sent.path.clone(),
        dir: dir.to_owned(),
        digest: None,
        body: None,
    }
}

#[cfg(test)]
mod tests;
