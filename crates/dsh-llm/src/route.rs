use serde_json::{Map, Value, json};

/// `max_tokens` when `initialize` gave none.
pub const DEFAULT_MAX_TOKENS: u64 = 256_000;
/// Context window of every model this runtime knows.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 1_000_000;
/// Reasoning efforts every built-in provider accepts.
pub const EFFORTS: [&str; 4] = ["off", "low", "high", "max"];
const DEFAULT_EFFORT: &str = "high";

/// The model route of an agent: what `initialize` chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Provider name.
    pub provider: String,
    /// Model id, passed through.
    pub model: String,
    /// Effort given at `initialize`, if any.
    pub reasoning_effort: Option<String>,
    /// Token cap given at `initialize`, if any.
    pub max_tokens: Option<u64>,
}

impl Route {
    /// The effort in force.
    pub fn effort(&self) -> &str {
        self.reasoning_effort.as_deref().unwrap_or(DEFAULT_EFFORT)
    }

    /// The token cap in force.
    pub fn max_tokens(&self) -> u64 {
        self.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)
    }

    /// `request/header.data.header.config` and `adapterDefaults`: provider,
    /// model, then the given values (effort, cap), then the defaulted ones
    /// (cap, effort); `adapterDefaults` flags the defaulted ones, or is
    /// absent when nothing was defaulted.
    pub fn header_config(&self) -> (Value, Option<Value>) {
        let mut config = Map::new();
        config.insert("provider".into(), json!(self.provider));
        config.insert("model".into(), json!(self.model));
        if let Some(effort) = &self.reasoning_effort {
            config.insert("reasoningEffort".into(), json!(effort));
        }
        if let Some(cap) = self.max_tokens {
            config.insert("maxTokens".into(), json!(cap));
        }
        if self.max_tokens.is_none() {
            config.insert("maxTokens".into(), json!(DEFAULT_MAX_TOKENS));
        }
        if self.reasoning_effort.is_none() {
            config.insert("reasoningEffort".into(), json!(DEFAULT_EFFORT));
        }
        let mut defaults = Map::new();
        if self.reasoning_effort.is_none() {
            defaults.insert("reasoningEffort".into(), json!(true));
        }
        if self.max_tokens.is_none() {
            defaults.insert("maxTokens".into(), json!(true));
        }
        (
            Value::Object(config),
            (!defaults.is_empty()).then_some(Value::Object(defaults)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(effort: Option<&str>, cap: Option<u64>) -> Route {
        Route {
            provider: "deepseek-official".into(),
            model: "m".into(),
            reasoning_effort: effort.map(Into::into),
            max_tokens: cap,
        }
    }

    fn text(v: &Value) -> String {
        serde_json::to_string(v).unwrap_or_default()
    }

    #[test]
    fn header_config_follows_the_official_key_order() {
        let (c, d) = route(None, None).header_config();
        assert_eq!(
            text(&c),
            r#"{"provider":"deepseek-official","model":"m","maxTokens":256000,"reasoningEffort":"high"}"#
        );
        assert_eq!(
            d.map(|d| text(&d)).as_deref(),
            Some(r#"{"reasoningEffort":true,"maxTokens":true}"#)
        );
        let (c, d) = route(None, Some(64)).header_config();
        assert_eq!(
            text(&c),
            r#"{"provider":"deepseek-official","model":"m","maxTokens":64,"reasoningEffort":"high"}"#
        );
        assert_eq!(
            d.map(|d| text(&d)).as_deref(),
            Some(r#"{"reasoningEffort":true}"#)
        );
        let (c, d) = route(Some("off"), Some(1000)).header_config();
        assert_eq!(
            text(&c),
            r#"{"provider":"deepseek-official","model":"m","reasoningEffort":"off","maxTokens":1000}"#
        );
        assert_eq!(d, None);
    }
}

/// What the runtime knows about a model: reported in `request/context`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModelInfo {
    /// Context window in tokens.
    pub context_window: u64,
    /// `Some("in-history")` when later system prompt changes are sent as
    /// history entries.
    pub system_prompt_update: Option<&'static str>,
    /// Whether the model accepts image input.
    pub accepts_images: bool,
}

impl Route {
    /// Catalog facts for this route's model; unknown models get the
    /// default window.
    pub fn model_info(&self) -> ModelInfo {
        let flash = self.provider == "deepseek-official" && self.model == "deepseek-flash";
        ModelInfo {
            context_window: DEFAULT_CONTEXT_WINDOW,
            system_prompt_update: flash.then_some("in-history"),
            accepts_images: flash,
        }
    }
}
