//! A session's settings as ACP shows them: the config options `model` and
//! `reasoning_effort` (as the official `acp` profile answers them) and the
//! modes, dsh's permission presets.

use crate::error::AcpError;
use dsh_agent::PermissionMode;
use serde_json::{Value, json};

/// The DeepSeek models offered in the `model` option: id, display name,
/// description.
const DEEPSEEK_MODELS: [(&str, &str, Option<&str>); 3] = [
    ("deepseek-v4-flash", "deepseek-v4-flash", None),
    ("deepseek-flash", "DeepSeek-V4.1-Flash", None),
    (
        "deepseek-v4-pro",
        "DeepSeek-V4-Pro",
        Some(
            "Stronger agentic coding, knowledge, and difficult reasoning; suited to complex or quality-critical tasks at higher cost.",
        ),
    ),
];

/// The reasoning efforts: value, name, description.
const EFFORTS: [(&str, &str, &str); 4] = [
    (
        "off",
        "Off",
        "Use for simple tasks that do not need reasoning.",
    ),
    (
        "low",
        "Low",
        "Prefer for routine or latency-sensitive tasks.",
    ),
    ("high", "High", "The default balance for most tasks."),
    ("max", "Max", "Reserve for the hardest quality-first tasks."),
];

/// The effort a route without one runs at.
const DEFAULT_EFFORT: &str = "high";

/// The `model` option's id.
pub const MODEL: &str = "model";
/// The `reasoning_effort` option's id.
pub const REASONING_EFFORT: &str = "reasoning_effort";

/// What a session runs with; changes apply from its next prompt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The provider (`deepseek-official`, `scripted`, …).
    pub provider: String,
    /// The model id (for `scripted`, `echo` or a scenario file).
    pub model: String,
    /// The reasoning effort chosen, `None` for the provider's default.
    pub effort: Option<String>,
    /// The permission preset.
    pub mode: PermissionMode,
}

impl Settings {
    /// The `configOptions` of a session with these settings.
    pub fn config_options(&self) -> Vec<Value> {
        let current = model_value(&self.provider, &self.model);
        let mut groups = Vec::new();
        let mut listed = false;
        let deepseek: Vec<Value> = DEEPSEEK_MODELS
            .iter()
            .map(|(id, name, description)| {
                listed |= self.provider == "deepseek-official" && self.model == *id;
                let mut option =
                    json!({"value": model_value("deepseek-official", id), "name": name});
                if let Some(description) = description {
                    option["description"] = json!(description);
                }
                option
            })
            .collect();
        groups.push(json!({"group": "deepseek-official", "name": "DeepSeek", "options": deepseek}));
        if !listed {
            groups.push(json!({
                "group": self.provider,
                "name": self.provider,
                "options": [{"value": current, "name": self.model}],
            }));
        }
        let efforts: Vec<Value> = EFFORTS
            .iter()
            .map(|(value, name, description)| json!({"value": value, "name": name, "description": description}))
            .collect();
        vec![
            json!({"id": MODEL, "name": "Model", "category": "model", "type": "select",
                   "currentValue": current, "options": groups}),
            json!({"id": REASONING_EFFORT, "name": "Reasoning effort", "category": "thought_level",
                   "type": "select", "currentValue": self.effort.as_deref().unwrap_or(DEFAULT_EFFORT),
                   "options": efforts}),
        ]
    }

    /// These settings with option `id` set to `value`.
    pub fn with_option(&self, id: &str, value: &Value) -> Result<Self, AcpError> {
        let text = value.as_str().ok_or_else(|| {
            AcpError::InvalidParams(format!(
                "session/set_config_option value of \"{id}\" must be a string"
            ))
        })?;
        let mut next = self.clone();
        match id {
            MODEL => {
                let offered = self.config_options()[0]["options"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|group| group["options"].as_array().into_iter().flatten())
                    .any(|option| option["value"] == text);
                let pair: Option<(String, String)> = serde_json::from_str(text).ok();
                match pair {
                    Some((provider, model)) if offered => {
                        next.provider = provider;
                        next.model = model;
                    }
                    _ => {
                        return Err(AcpError::InvalidParams(format!(
                            "session/set_config_option: \"{text}\" is not a value of \"{MODEL}\""
                        )));
                    }
                }
            }
            REASONING_EFFORT => {
                if !EFFORTS.iter().any(|(effort, _, _)| *effort == text) {
                    return Err(AcpError::InvalidParams(format!(
                        "session/set_config_option: \"{text}\" is not a value of \"{REASONING_EFFORT}\" (off, low, high, max)"
                    )));
                }
                next.effort = Some(text.to_owned());
            }
            other => {
                return Err(AcpError::InvalidParams(format!(
                    "session/set_config_option: unknown config option \"{other}\" (model, reasoning_effort)"
                )));
            }
        }
        Ok(next)
    }

    /// The `modes` of a session with these settings.
    pub fn modes(&self) -> Value {
        let modes: Vec<Value> = PermissionMode::ALL
            .iter()
            .map(|mode| json!({"id": mode.as_str(), "name": mode_name(*mode), "description": mode_description(*mode)}))
            .collect();
        json!({"currentModeId": self.mode.as_str(), "availableModes": modes})
    }
}

/// The mode named `id`.
pub fn parse_mode(id: &str) -> Result<PermissionMode, AcpError> {
    id.parse().map_err(|_| {
        AcpError::InvalidParams(format!(
            "session/set_mode: unknown mode \"{id}\" (read-only, workspace-write, danger-full-access)"
        ))
    })
}

fn mode_name(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::ReadOnly => "Read only",
        PermissionMode::WorkspaceWrite => "Workspace write",
        PermissionMode::DangerFullAccess => "Full access",
    }
}

fn mode_description(mode: PermissionMode) -> &'static str {
    match mode {
        PermissionMode::ReadOnly => {
            "Commands and file tools read; nothing is written. Wider access is asked for."
        }
        PermissionMode::WorkspaceWrite => {
            "Writes inside the workspace only. Wider access is asked for."
        }
        PermissionMode::DangerFullAccess => {
            "No sandbox: commands and file tools may change anything."
        }
    }
}

/// A model option's value: the JSON text of `[provider, model]`.
fn model_value(provider: &str, model: &str) -> String {
    Value::from(vec![provider, model]).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            provider: "deepseek-official".into(),
            model: "deepseek-v4-flash".into(),
            effort: None,
            mode: PermissionMode::WorkspaceWrite,
        }
    }

    #[test]
    fn options_show_the_current_route() {
        let options = settings().config_options();
        assert_eq!(
            options[0]["currentValue"],
            r#"["deepseek-official","deepseek-v4-flash"]"#
        );
        assert_eq!(options[0]["options"].as_array().unwrap().len(), 1);
        assert_eq!(options[1]["currentValue"], "high");
        let scripted = Settings {
            provider: "scripted".into(),
            model: "echo".into(),
            ..settings()
        };
        let options = scripted.config_options();
        assert_eq!(
            options[0]["options"][1]["options"][0]["value"],
            r#"["scripted","echo"]"#
        );
    }

    #[test]
    fn options_change_only_to_offered_values() {
        let pro = settings()
            .with_option(MODEL, &json!(r#"["deepseek-official","deepseek-v4-pro"]"#))
            .unwrap();
        assert_eq!(pro.model, "deepseek-v4-pro");
        assert!(
            settings()
                .with_option(MODEL, &json!(r#"["x","y"]"#))
                .is_err()
        );
        assert_eq!(
            settings()
                .with_option(REASONING_EFFORT, &json!("low"))
                .unwrap()
                .effort
                .as_deref(),
            Some("low")
        );
        assert!(
            settings()
                .with_option(REASONING_EFFORT, &json!("huge"))
                .is_err()
        );
        assert!(settings().with_option("colour", &json!("red")).is_err());
        assert!(parse_mode("read-only").is_ok() && parse_mode("yolo").is_err());
    }
}
