use crate::deepseek::{self, DeepSeekConfig, DeepSeekOfficial};
use crate::http::{self, BaseUrlError};
use crate::openai::{self, OpenAiCompatible, OpenAiConfig};
use crate::scripted::{ScenarioError, ScriptedProvider};
use crate::{EFFORTS, Provider, ReplyLimits, Route};
use dsh_session::attachments::AttachmentStore;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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
    /// A configured base URL is unusable.
    #[error("provider \"{provider}\": {source}")]
    BaseUrl {
        /// Provider name.
        provider: String,
        /// What is wrong.
        source: BaseUrlError,
    },
    /// `openai-compatible` without a base URL.
    #[error(
        "provider \"openai-compatible\" needs a base URL: set DSH_OPENAI_BASE_URL (or OPENAI_BASE_URL), e.g. http://127.0.0.1:8000/v1"
    )]
    MissingBaseUrl,
}

/// Everything providers take from the launch environment.
#[derive(Debug, Clone)]
pub struct ProviderEnv {
    /// `DSH_HOME` (attachments live under it).
    pub dsh_home: PathBuf,
    /// `DEEPSEEK_API_KEY`.
    pub deepseek_api_key: Option<String>,
    /// `DEEPSEEK_BASE_URL`.
    pub deepseek_base_url: Option<String>,
    /// `DSH_OPENAI_BASE_URL` or `OPENAI_BASE_URL`.
    pub openai_base_url: Option<String>,
    /// `DSH_OPENAI_API_KEY` or `OPENAI_API_KEY`.
    pub openai_api_key: Option<String>,
    /// Idle-stream timeout of HTTP providers.
    pub idle_timeout: Duration,
    /// Size caps on HTTP providers' replies and error bodies.
    pub limits: ReplyLimits,
}

/// Mounts providers for routes chosen at `initialize`.
#[derive(Debug, Clone)]
pub struct ProviderRegistry {
    env: ProviderEnv,
    attachments: AttachmentStore,
}

impl ProviderRegistry {
    /// A registry over the launch environment.
    pub fn new(env: ProviderEnv) -> Self {
        let attachments = AttachmentStore::new(&env.dsh_home);
        Self { env, attachments }
    }

    /// The attachment store prompts' images are admitted to.
    pub fn attachments(&self) -> &AttachmentStore {
        &self.attachments
    }

    /// Validates `route` and mounts its provider.
    pub fn mount(&self, route: &Route) -> Result<Arc<dyn Provider>, RouteError> {
        if let Some(effort) = &route.reasoning_effort
            && !EFFORTS.contains(&effort.as_str())
            && matches!(
                route.provider.as_str(),
                crate::scripted::NAME | deepseek::NAME | openai::NAME
            )
        {
            return Err(RouteError::UnsupportedEffort {
                provider: route.provider.clone(),
                model: route.model.clone(),
                effort: effort.clone(),
            });
        }
        let base = |provider: &str, url: &str| {
            http::base_url(url).map_err(|source| RouteError::BaseUrl {
                provider: provider.to_owned(),
                source,
            })
        };
        Ok(match route.provider.as_str() {
            crate::scripted::NAME => Arc::new(ScriptedProvider::for_model(&route.model)?),
            deepseek::NAME => {
                let url = self
                    .env
                    .deepseek_base_url
                    .as_deref()
                    .unwrap_or(deepseek::DEFAULT_BASE_URL);
                let config = DeepSeekConfig {
                    base_url: base(deepseek::NAME, url)?,
                    api_key: self.env.deepseek_api_key.clone(),
                    idle_timeout: self.env.idle_timeout,
                    limits: self.env.limits,
                    attachments: self.attachments.clone(),
                };
                Arc::new(DeepSeekOfficial::new(config))
            }
            openai::NAME => {
                let url = self
                    .env
                    .openai_base_url
                    .as_deref()
                    .ok_or(RouteError::MissingBaseUrl)?;
                let config = OpenAiConfig {
                    base_url: base(openai::NAME, url)?,
                    api_key: self.env.openai_api_key.clone(),
                    idle_timeout: self.env.idle_timeout,
                    limits: self.env.limits,
                };
                Arc::new(OpenAiCompatible::new(config))
            }
            other => return Err(RouteError::NoAdapter(other.to_owned())),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> ProviderRegistry {
        ProviderRegistry::new(ProviderEnv {
            dsh_home: std::env::temp_dir(),
            deepseek_api_key: None,
            deepseek_base_url: None,
            openai_base_url: None,
            openai_api_key: None,
            idle_timeout: Duration::from_secs(1),
            limits: ReplyLimits::default(),
        })
    }

    fn route(provider: &str, model: &str, effort: Option<&str>) -> Route {
        Route {
            provider: provider.into(),
            model: model.into(),
            reasoning_effort: effort.map(Into::into),
            max_tokens: None,
        }
    }

    fn error(route: &Route) -> Option<String> {
        registry().mount(route).err().map(|e| e.to_string())
    }

    #[test]
    fn errors_carry_the_official_messages() {
        assert_eq!(
            error(&route("not-a-provider", "m", None)).as_deref(),
            Some("no adapter registered for provider \"not-a-provider\"")
        );
        assert_eq!(
            error(&route(
                "deepseek-official",
                "deepseek-v4-flash",
                Some("ultra")
            ))
            .as_deref(),
            Some(
                "provider \"deepseek-official\" model \"deepseek-v4-flash\" does not support reasoning effort \"ultra\""
            )
        );
        assert_eq!(
            error(&route("deepseek-official", "no-such-model", Some("max"))),
            None
        );
        assert_eq!(error(&route("scripted", "echo", Some("off"))), None);
        assert!(error(&route("scripted", "relative/path.yaml", None)).is_some());
        assert!(
            error(&route("openai-compatible", "m", None))
                .is_some_and(|e| e.contains("DSH_OPENAI_BASE_URL"))
        );
    }

    #[test]
    fn bad_base_urls_are_refused_at_mount() {
        let mut r = registry();
        r.env.deepseek_base_url = Some("ftp://nope".into());
        let err = r
            .mount(&route("deepseek-official", "m", None))
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            err.starts_with("provider \"deepseek-official\": invalid base URL \"ftp://nope\""),
            "{err}"
        );
    }
}
