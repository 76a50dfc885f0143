//! Hook configuration in Claude Code's `settings.json` shape, which Codex's
//! `hooks.json` shares: `{"hooks": {"<Event>": [{"matcher": "…", "hooks":
//! [{"type": "command", "command": "…", "timeout": <seconds>}]}]}}`.
//!
//! Sources are layered and every matching hook of every source runs, as in
//! Claude Code: `DSH_HOME/hooks.json`, `--patch` overlays (`hooks:`),
//! `initialize` (`hooks`), then, only when the client trusts the project,
//! the workspace's `.claude/settings.json`, `.claude/settings.local.json`
//! and `.codex/hooks.json`. A trusted source that does not fit is an error
//! naming the field; a project file that does not fit is skipped with a
//! warning (a cloned repository is not the user's configuration).

use crate::event::HookEvent;
use crate::matcher::{Matcher, MatcherError};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// A hook's time limit when its configuration gives none (Claude Code's).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Longest time limit a hook may be given (one day).
pub const MAX_TIMEOUT_SECS: f64 = 86_400.0;

/// Largest configuration file read.
pub const FILE_MAX_BYTES: u64 = 1024 * 1024;

/// Most hooks one configuration may hold in all.
pub const MAX_HOOKS: usize = 256;

/// Where a hook comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SourceKind {
    /// `DSH_HOME/hooks.json`.
    Home,
    /// A `--patch` overlay's `hooks:`.
    Patch,
    /// `initialize`'s `hooks`.
    Initialize,
    /// The workspace's `.claude/settings.json`.
    ProjectClaude,
    /// The workspace's `.claude/settings.local.json`.
    ProjectClaudeLocal,
    /// The workspace's `.codex/hooks.json`.
    ProjectCodex,
}

impl SourceKind {
    /// Whether the source is a file of the workspace (trusted only when the
    /// client says so).
    pub fn is_project(self) -> bool {
        matches!(
            self,
            Self::ProjectClaude | Self::ProjectClaudeLocal | Self::ProjectCodex
        )
    }
}

/// One source as loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    /// Its kind.
    pub kind: SourceKind,
    /// Its file, when it is one.
    pub path: Option<PathBuf>,
    /// How many hooks it added.
    pub hooks: usize,
    /// Events and hook types it holds that dsh does not run (named, so a
    /// user sees what is ignored).
    pub ignored: Vec<String>,
    /// Why it was not used (a project file that does not fit).
    pub error: Option<String>,
}

/// One command to run.
#[derive(Debug, Clone)]
pub struct Handler {
    /// The command line, run by `/bin/sh -c`.
    pub command: String,
    /// Its time limit.
    pub timeout: Duration,
    /// Variables hidden from hooks (the providers' credentials) that this
    /// hook sees all the same (`passEnv`).
    pub pass_env: Vec<String>,
    /// Where it was configured.
    pub source: SourceKind,
}

/// A matcher and its commands, for one event.
#[derive(Debug, Clone)]
pub struct Group {
    /// The event.
    pub event: HookEvent,
    /// Which values (tool names, start sources, …) it runs for.
    pub matcher: Matcher,
    /// Its commands.
    pub handlers: Vec<Arc<Handler>>,
}

/// The hooks of one session and what their runs need besides.
#[derive(Debug, Clone)]
pub struct SessionHooks {
    /// The hooks.
    pub set: HookSet,
    /// Variables removed from every hook's environment (the providers'
    /// credentials and `DSH_SANDBOX_ENV_DENY`), unless a hook passes one by
    /// name.
    pub hidden: dsh_tools::HiddenEnv,
}

/// Why a configuration cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    /// A field does not fit; the message names it.
    #[error("{0}")]
    Invalid(String),
    /// More than [`MAX_HOOKS`] hooks.
    #[error("more than {MAX_HOOKS} hooks are configured")]
    TooMany,
    /// A file could not be read.
    #[error("{path}: {message}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        message: String,
    },
}

/// The hooks of a session: every source's groups, in source order.
#[derive(Debug, Clone, Default)]
pub struct HookSet {
    groups: Vec<Group>,
    sources: Vec<Source>,
}

impl HookSet {
    /// Whether no hook is configured (then nothing runs and nothing is
    /// recorded).
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The sources loaded, in order.
    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// The groups of `event`.
    pub fn groups(&self, event: HookEvent) -> impl Iterator<Item = &Group> {
        self.groups.iter().filter(move |g| g.event == event)
    }

    /// Whether any hook runs for `event`.
    pub fn has(&self, event: HookEvent) -> bool {
        self.groups(event).next().is_some()
    }

    fn count(&self) -> usize {
        self.groups.iter().map(|g| g.handlers.len()).sum()
    }

    /// Adds the hooks of a settings object (`{"hooks": {…}}`; other keys
    /// are not read) from `kind` at `path`.
    pub fn add_settings(
        &mut self,
        kind: SourceKind,
        path: Option<&Path>,
        settings: &Value,
    ) -> Result<(), ConfigError> {
        let Some(object) = settings.as_object() else {
            return Err(ConfigError::Invalid("must be a JSON object".into()));
        };
        match object.get("hooks") {
            None | Some(Value::Null) => self.add_hooks(kind, path, &Value::Object(Map::new())),
            Some(hooks) => self.add_hooks(kind, path, hooks),
        }
    }

    /// Adds a `hooks` object (event name → groups) from `kind` at `path`.
    /// On an error nothing is added.
    pub fn add_hooks(
        &mut self,
        kind: SourceKind,
        path: Option<&Path>,
        hooks: &Value,
    ) -> Result<(), ConfigError> {
        let Some(events) = hooks.as_object() else {
            return Err(ConfigError::Invalid("hooks must be an object".into()));
        };
        let mut groups = Vec::new();
        let mut ignored = Vec::new();
        for (name, list) in events {
            let Some(event) = HookEvent::from_name(name) else {
                ignored.push(format!("event {name}"));
                continue;
            };
            let Some(list) = list.as_array() else {
                return Err(invalid(&format!("hooks.{name}"), "must be an array"));
            };
            for (i, group) in list.iter().enumerate() {
                let at = format!("hooks.{name}[{i}]");
                if let Some(group) = parse_group(event, kind, group, &at, &mut ignored)? {
                    groups.push(group);
                }
            }
        }
        let hooks: usize = groups.iter().map(|g| g.handlers.len()).sum();
        if self.count() + hooks > MAX_HOOKS {
            return Err(ConfigError::TooMany);
        }
        self.groups.extend(groups);
        self.sources.push(Source {
            kind,
            path: path.map(Path::to_path_buf),
            hooks,
            ignored,
            error: None,
        });
        Ok(())
    }

    /// Adds every source of `other` after this set's.
    pub fn extend(&mut self, other: &HookSet) {
        self.groups.extend(other.groups.iter().cloned());
        self.sources.extend(other.sources.iter().cloned());
    }

    /// Adds the workspace's project files (`.claude/settings.json`,
    /// `.claude/settings.local.json`, `.codex/hooks.json`); a file that is
    /// absent is skipped, one that cannot be read or does not fit is
    /// recorded with its error (and a warning) and adds nothing.
    pub fn add_project(&mut self, workspace: &Path) {
        let files = [
            (SourceKind::ProjectClaude, ".claude/settings.json"),
            (
                SourceKind::ProjectClaudeLocal,
                ".claude/settings.local.json",
            ),
            (SourceKind::ProjectCodex, ".codex/hooks.json"),
        ];
        for (kind, name) in files {
            let path = workspace.join(name);
            let added = match read_json(&path) {
                Ok(None) => continue,
                Ok(Some(settings)) => self.add_settings(kind, Some(&path), &settings),
                Err(err) => Err(err),
            };
            if let Err(err) = added {
                tracing::warn!("{}: hooks not used: {err}", path.display());
                self.sources.push(Source {
                    kind,
                    path: Some(path),
                    hooks: 0,
                    ignored: Vec::new(),
                    error: Some(err.to_string()),
                });
            }
        }
    }
}

/// Reads a JSON file of at most [`FILE_MAX_BYTES`]; `Ok(None)` when it
/// does not exist.
pub fn read_json(path: &Path) -> Result<Option<Value>, ConfigError> {
    let read_error = |message: String| ConfigError::Read {
        path: path.to_owned(),
        message,
    };
    let bytes = match dsh_tools::read_regular(path, FILE_MAX_BYTES) {
        Ok(bytes) => bytes,
        Err(dsh_tools::ReadRegularError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => {
            return Ok(None);
        }
        Err(err) => return Err(read_error(err.to_string())),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|err| read_error(format!("not JSON: {err}")))
}

fn invalid(at: &str, what: &str) -> ConfigError {
    ConfigError::Invalid(format!("{at} {what}"))
}

/// One `{matcher, hooks}` group; `None` when none of its hooks is of a type
/// dsh runs.
fn parse_group(
    event: HookEvent,
    source: SourceKind,
    group: &Value,
    at: &str,
    ignored: &mut Vec<String>,
) -> Result<Option<Group>, ConfigError> {
    let Some(group) = group.as_object() else {
        return Err(invalid(at, "must be an object"));
    };
    let matcher = match group.get("matcher") {
        None | Some(Value::Null) => None,
        Some(Value::String(text)) => Some(text.as_str()),
        Some(_) => return Err(invalid(&format!("{at}.matcher"), "must be a string")),
    };
    let matcher = Matcher::parse(matcher)
        .map_err(|err: MatcherError| ConfigError::Invalid(format!("{at}.matcher {err}")))?;
    let Some(list) = group.get("hooks").and_then(Value::as_array) else {
        return Err(invalid(&format!("{at}.hooks"), "must be an array"));
    };
    let mut handlers = Vec::new();
    for (j, hook) in list.iter().enumerate() {
        let at = format!("{at}.hooks[{j}]");
        let Some(hook) = hook.as_object() else {
            return Err(invalid(&at, "must be an object"));
        };
        match hook.get("type").and_then(Value::as_str) {
            Some("command") => {}
            Some(other) => {
                ignored.push(format!("{} hook of type {other}", event.name()));
                continue;
            }
            None => return Err(invalid(&format!("{at}.type"), "must be a string")),
        }
        for key in hook.keys() {
            let known = ["type", "command", "timeout", "timeoutSec", "passEnv"];
            let note = format!("{} hook field {key}", event.name());
            if !known.contains(&key.as_str()) && !ignored.contains(&note) {
                ignored.push(note);
            }
        }
        let command = match hook.get("command") {
            Some(Value::String(command)) if !command.trim().is_empty() => command.clone(),
            _ => {
                return Err(invalid(
                    &format!("{at}.command"),
                    "must be a non-empty string",
                ));
            }
        };
        let timeout = match hook.get("timeout").or_else(|| hook.get("timeoutSec")) {
            None | Some(Value::Null) => DEFAULT_TIMEOUT,
            Some(value) => match value.as_f64() {
                Some(secs) if secs > 0.0 && secs <= MAX_TIMEOUT_SECS => {
                    Duration::from_secs_f64(secs)
                }
                _ => {
                    return Err(invalid(
                        &format!("{at}.timeout"),
                        "must be a number of seconds above 0 and at most 86400",
                    ));
                }
            },
        };
        let pass_env = match hook.get("passEnv") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(names)) => names
                .iter()
                .map(|name| name.as_str().map(str::to_owned))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| invalid(&format!("{at}.passEnv"), "must be an array of names"))?,
            Some(_) => {
                return Err(invalid(
                    &format!("{at}.passEnv"),
                    "must be an array of names",
                ));
            }
        };
        handlers.push(Arc::new(Handler {
            command,
            timeout,
            pass_env,
            source,
        }));
    }
    Ok((!handlers.is_empty()).then_some(Group {
        event,
        matcher,
        handlers,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claude_settings_load_with_their_defaults() {
        let mut set = HookSet::default();
        let settings = json!({
            "permissions": {"allow": ["Bash(ls)"]},
            "hooks": {
                "PreToolUse": [{"matcher": "Bash", "hooks": [
                    {"type": "command", "command": "check.sh", "timeout": 5, "async": true},
                    {"type": "prompt", "prompt": "is it safe?"}
                ]}],
                "Stop": [{"hooks": [{"type": "command", "command": "tests.sh", "passEnv": ["DEEPSEEK_API_KEY"]}]}],
                "PermissionRequest": [{"hooks": [{"type": "command", "command": "x"}]}]
            }
        });
        let added = set.add_settings(SourceKind::ProjectClaude, None, &settings);
        assert_eq!(added, Ok(()));
        assert!(set.has(HookEvent::PreToolUse) && set.has(HookEvent::Stop));
        assert!(!set.has(HookEvent::PostToolUse));
        let pre: Vec<&Group> = set.groups(HookEvent::PreToolUse).collect();
        assert_eq!(pre.len(), 1);
        assert_eq!(pre[0].handlers.len(), 1, "the prompt hook is not run");
        assert_eq!(pre[0].handlers[0].timeout, Duration::from_secs(5));
        let stop = &set
            .groups(HookEvent::Stop)
            .next()
            .map(|g| g.handlers[0].clone());
        assert_eq!(stop.as_ref().map(|h| h.timeout), Some(DEFAULT_TIMEOUT));
        assert_eq!(
            stop.as_ref().map(|h| h.pass_env.clone()),
            Some(vec!["DEEPSEEK_API_KEY".to_owned()])
        );
        let source = &set.sources()[0];
        assert_eq!(source.hooks, 2);
        assert_eq!(
            source.ignored,
            [
                "PreToolUse hook field async",
                "PreToolUse hook of type prompt",
                "event PermissionRequest"
            ]
        );
    }

    #[test]
    fn a_field_that_does_not_fit_is_named_and_adds_nothing() {
        let cases = [
            (json!({"hooks": []}), "hooks must be an object"),
            (
                json!({"hooks": {"Stop": {}}}),
                "hooks.Stop must be an array",
            ),
            (
                json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": " "}]}]}}),
                "hooks.Stop[0].hooks[0].command must be a non-empty string",
            ),
            (
                json!({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}),
                "hooks.Stop[0].hooks[0].timeout must be a number of seconds above 0 and at most 86400",
            ),
            (
                json!({"hooks": {"PreToolUse": [{"matcher": "(", "hooks": []}]}}),
                "hooks.PreToolUse[0].matcher is not a valid regular expression",
            ),
            (
                json!({"hooks": {"Stop": [{"matcher": 3, "hooks": []}]}}),
                "hooks.Stop[0].matcher must be a string",
            ),
        ];
        for (settings, message) in cases {
            let mut set = HookSet::default();
            let err = set.add_settings(SourceKind::Initialize, None, &settings);
            let text = err.map_err(|e| e.to_string()).err().unwrap_or_default();
            assert!(text.starts_with(message), "{text} / {message}");
            assert!(set.is_empty() && set.sources().is_empty());
        }
        let many: Vec<Value> = (0..=MAX_HOOKS)
            .map(|i| json!({"type": "command", "command": format!("c{i}")}))
            .collect();
        let mut set = HookSet::default();
        let err = set.add_hooks(SourceKind::Home, None, &json!({"Stop": [{"hooks": many}]}));
        assert_eq!(err, Err(ConfigError::TooMany));
    }

    #[test]
    fn project_files_load_and_a_broken_one_is_recorded_not_used() -> std::io::Result<()> {
        let dir = tempfile::tempdir()?;
        std::fs::create_dir_all(dir.path().join(".claude"))?;
        std::fs::create_dir_all(dir.path().join(".codex"))?;
        std::fs::write(
            dir.path().join(".claude/settings.json"),
            r#"{"hooks":{"PostToolUse":[{"matcher":"Edit|Write","hooks":[{"type":"command","command":"fmt"}]}]}}"#,
        )?;
        std::fs::write(dir.path().join(".codex/hooks.json"), "{not json")?;
        let mut set = HookSet::default();
        set.add_project(dir.path());
        assert!(set.has(HookEvent::PostToolUse));
        let kinds: Vec<(SourceKind, bool)> = set
            .sources()
            .iter()
            .map(|s| (s.kind, s.error.is_some()))
            .collect();
        assert_eq!(
            kinds,
            [
                (SourceKind::ProjectClaude, false),
                (SourceKind::ProjectCodex, true)
            ]
        );
        Ok(())
    }
}
