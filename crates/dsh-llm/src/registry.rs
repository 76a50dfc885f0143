use crate::deepseek::DeepSeekOfficial;
use crate::scripted::{ScenarioError, ScriptedProvider};
use crate::{EFFORTS, Provider, Route};
use std::sync::Arc;

/// Why a route cannot be mounted; each message is the wire error text.
#[derive(Debug, thiserror::Error)]
pub enum RouteError {
    /// No provider of that name.
    #[error("no adapter registered for provider \"{0}\"")]
    NoAdapter(String),
    /// The provider does not accept this effort.
    #[error(
        "provider \"{provider}\" model \"{model}\" does not support reasoning effort \"{effort}\""
    )]
    UnsupportedEffort {
        /// Provider name.
        provider: String,
        /// Model id.
        model: String,
        /// Rejected effort.
        effort: String,
    },
    /// The scripted provider's model is neither `echo` nor a valid scenario.
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
}

/// Mounts providers for routes chosen at `initialize`.
#[derive(Debug, Clone, Default)]
pub struct ProviderRegistry {
    api_key: Option<String>,
}

impl ProviderRegistry {
    /// A registry whose HTTP providers use `api_key` (from the launch
    /// environment).
    pub fn new(api_key: Option<String>) -> Self {
        Self { api_key }
    }

    /// Validates `route` and mounts its provider.
    pub fn mount(&self, route: &Route) -> Result<Arc<dyn Provider>, RouteError> {
        let provider: Arc<dyn Provider> = match route.provider.as_str() {
            crate::scripted::NAME => Arc::new(ScriptedProvider::for_model(&route.model)?),
            crate::deepseek::NAME => Arc::new(DeepSeekOfficial::new(self.api_key.clone())),
            other => return Err(RouteError::NoAdapter(other.to_owned())),
        };
        if let Some(effort) = &route.reasoning_effort
            && !EFFORTS.contains(&effort.as_str())
        {
            return Err(RouteError::UnsupportedEffort {
                provider: route.provider.clone(),
                model: route.model.clone(),
                effort: effort.clone(),
            });
        }
        Ok(provider)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(provider: &str, model: &str, effort: Option<&str>) -> Route {
        Route {
            provider: provider.into(),
            model: model.into(),
            reasoning_effort: effort.map(Into::into),
            max_tokens: None,
        }
    }

    #[test]
    fn errors_carry_the_official_messages() {
        let reg = ProviderRegistry::new(None);
        let err = reg
            .mount(&route("not-a-provider", "m", None))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some("no adapter registered for provider \"not-a-provider\"")
        );
        let err = reg
            .mount(&route(
                "deepseek-official",
                "deepseek-v4-flash",
                Some("ultra"),
            ))
            .err()
            .map(|e| e.to_string());
        assert_eq!(
            err.as_deref(),
            Some(
                "provider \"deepseek-official\" model \"deepseek-v4-flash\" does not support reasoning effort \"ultra\""
            )
        );
        assert!(
            reg.mount(&route("deepseek-official", "no-such-model", Some("max")))
                .is_ok()
        );
        assert!(reg.mount(&route("scripted", "echo", Some("off"))).is_ok());
        assert!(
            reg.mount(&route("scripted", "relative/path.yaml", None))
                .is_err()
        );
    }
}
