//! A session's settings as ACP shows them: the config options `model` and
//! `reasoning_effort` (as the official `acp` profile answers them) and the
//! modes, dsh's permission presets.

use crate::error::AcpError;
use dsh_agent::PermissionMode;
use serde_json::{Value, json};

/// The DeepSeek models of the `model` option's catalogue: id, display
/// name, description. As in the official profile, the route's own model
/// is listed first when the catalogue does not hold it (the default
/// `deepseek-v4-flash` among them), under its id.
const DEEPSEEK_MODELS: [(&str, &str, Option<&str>); 2] = [
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
        let deepseek = self.provider == "deepseek-official";
        let mut catalogue: Vec<Value> = DEEPSEEK_MODELS
            .iter()
            .map(|(id, name, description)| {
                let mut option =
                    json!({"value": model_value("deepseek-official", id), "name": name});
                if let Some(description) = description {
                    option["description"] = json!(description);
                }
                option
            })
            .collect();
        let own = json!({"value": current, "name": self.model});
        let listed = catalogue.iter().any(|option| option["value"] == current);
        if deepseek && !listed {
            catalogue.insert(0, own.clone());
        }
        let mut groups =
            vec![json!({"group": "deepseek-official", "name": "DeepSeek", "options": catalogue})];
        if !deepseek {
            groups.push(json!({"group": self.provider, "name": self.provider, "options": [own]}));
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
                        // Another model starts at its default effort, as in
                        // the official profile.
                        if (provider.as_str(), model.as_str())
                            != (self.provider.as_str(), self.model.as_str())
                        {
                            next.effort = None;
                        }
                        next.provider = provider;
                        next.model = model;
                    }
                    _ => {
                        return Err(AcpError::InvalidParams(format!(
                            "unknown model option: {text}"
                        )));
                    }
                }
            }
            REASONING_EFFORT => {
                if !EFFORTS.iter().any(|(effort, _, _)| *effort == text) {
                    return Err(AcpError::InvalidParams(format!(
                        "unknown reasoning effort for {}/{}: {text}",
                        self.provider, self.model
                    )));
                }
                next.effort = Some(text.to_owned());
            }
            other => {
                return Err(AcpError::InvalidParams(format!(
                    "unknown session config option: {other}"
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
            "unknown mode: {id} (read-only, workspace-write, danger-full-access)"
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
        let group = &options[0]["options"][0]["options"];
        assert_eq!(group.as_array().unwrap().len(), 3);
        assert_eq!(group[0]["name"], "deepseek-v4-flash");
        // Off the default, the default is no longer offered.
        let pro = settings()
            .with_option(MODEL, &json!(r#"["deepseek-official","deepseek-v4-pro"]"#))
            .unwrap();
        assert_eq!(
            pro.config_options()[0]["options"][0]["options"]
                .as_array()
                .unwrap()
                .len(),
            2
        );
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
