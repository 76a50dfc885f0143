//! Everything decided before the runtime starts: profile, overlays, the
//! launch environment and `DSH_HOME`.

use crate::cli::Cli;
use dsh_agent::{PermissionMode, Profile};
use dsh_llm::ProviderRegistry;
use dsh_server::ServerConfig;
use serde_yaml_ng::Value as Yaml;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Why the launcher refused to start; the text is the stderr line.
#[derive(Debug, thiserror::Error)]
pub enum LaunchError {
    /// No profile given.
    #[error("error: --profile <name> is required")]
    NoProfile,
    /// Not a built-in profile.
    #[error(
        "Error: dsh: profile \"{0}\" does not exist; the built-in profiles are sdk and sdk-minimal"
    )]
    UnknownProfile(String),
    /// An app argument the SDK profiles do not take.
    #[error("error: unknown option '{0}'")]
    UnknownOption(String),
    /// An overlay file cannot be read.
    #[error("Error: dsh: failed to read overlay {path}: {source}")]
    ReadOverlay {
        /// The file, made absolute.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// An overlay file is not a valid overlay.
    #[error("Error: dsh: invalid overlay {path}: {message}")]
    InvalidOverlay {
        /// The file, made absolute.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// An SDK profile without an explicit home.
    #[error("dsh: the {0} profile requires an explicit DSH_HOME; it never uses ~/.dsh implicitly")]
    NoHome(String),
    /// A bad `DSH_PERMISSION_MODE`.
    #[error("dsh: DSH_PERMISSION_MODE: {0}")]
    PermissionMode(String),
    /// The process cwd is unusable.
    #[error("dsh: cannot determine the current directory: {0}")]
    Cwd(std::io::Error),
}

impl LaunchError {
    /// The process exit code for this refusal.
    pub fn exit_code(&self) -> u8 {
        match self {
            Self::NoHome(_) => 2,
            _ => 1,
        }
    }
}

/// What [`Launch::prepare`] decided.
pub enum Prepared {
    /// Start the runtime.
    Run(Launch),
    /// Nothing to run (help was printed).
    Done,
}

/// A validated launch.
pub struct Launch {
    profile: Profile,
    env: LaunchEnv,
    process_cwd: PathBuf,
}

const APP_HELP: &str = "Usage: dsh --profile <sdk|sdk-minimal> [--patch <file>]...\n\n\
Serves the DeepSeek Harness SDK protocol (newline-delimited JSON-RPC 2.0) on stdin/stdout.\n\
Requires DSH_HOME. Diagnostics go to stderr; set DSH_LOG=debug for more.\n";

impl Launch {
    /// Validates the command line, reads the overlays and checks `DSH_HOME`.
    pub fn prepare(cli: &Cli) -> Result<Prepared, LaunchError> {
        let name = cli.profile.as_deref().ok_or(LaunchError::NoProfile)?;
        if !matches!(name, "sdk" | "sdk-minimal") {
            return Err(LaunchError::UnknownProfile(name.to_owned()));
        }
        if let Some(arg) = cli.app_args.first() {
            if arg == "-h" || arg == "--help" {
                print!("{APP_HELP}");
                return Ok(Prepared::Done);
            }
            return Err(LaunchError::UnknownOption(arg.clone()));
        }
        let process_cwd = std::env::current_dir().map_err(LaunchError::Cwd)?;
        let mut env = LaunchEnv::default();
        for patch in &cli.patches {
            env.apply_overlay(&process_cwd.join(patch))?;
        }
        if env
            .get("DSH_HOME")
            .is_none_or(|home| home.trim().is_empty())
        {
            return Err(LaunchError::NoHome(name.to_owned()));
        }
        let profile = if name == "sdk" {
            let mode = match env.get("DSH_PERMISSION_MODE") {
                Some(mode) => mode.parse().map_err(LaunchError::PermissionMode)?,
                None => PermissionMode::WorkspaceWrite,
            };
            Profile::sdk(mode)
        } else {
            Profile::sdk_minimal(env.get("DSH_SYSTEM_PROMPT"))
        };
        Ok(Prepared::Run(Self {
            profile,
            env,
            process_cwd,
        }))
    }

    /// The server configuration of this launch.
    pub fn server_config(self) -> ServerConfig {
        ServerConfig {
            profile: self.profile,
            registry: ProviderRegistry::new(self.env.get("DEEPSEEK_API_KEY")),
            process_cwd: self.process_cwd,
        }
    }
}

/// The launch environment: the process environment, then values from
/// overlays' `env:` maps for variables the process does not set. The
/// process environment itself is never modified.
#[derive(Debug, Default)]
struct LaunchEnv {
    overlay: BTreeMap<String, String>,
}

impl LaunchEnv {
    fn get(&self, key: &str) -> Option<String> {
        std::env::var(key)
            .ok()
            .or_else(|| self.overlay.get(key).cloned())
    }

    /// Reads one overlay. Honoured: `env:` (a map of variable → scalar);
    /// other top-level keys are reported and ignored.
    fn apply_overlay(&mut self, path: &Path) -> Result<(), LaunchError> {
        let text = std::fs::read_to_string(path).map_err(|source| LaunchError::ReadOverlay {
            path: path.to_owned(),
            source,
        })?;
        let invalid = |message: String| LaunchError::InvalidOverlay {
            path: path.to_owned(),
            message,
        };
        let yaml: Yaml = serde_yaml_ng::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        let map = match yaml {
            Yaml::Null => return Ok(()),
            Yaml::Mapping(map) => map,
            _ => return Err(invalid("the top level must be a mapping".into())),
        };
        for (key, value) in map {
            match (key.as_str(), value) {
                (Some("env"), Yaml::Mapping(vars)) => {
                    for (name, value) in vars {
                        let name = name
                            .as_str()
                            .ok_or_else(|| invalid("env keys must be strings".into()))?;
                        let value = match value {
                            Yaml::String(s) => s,
                            Yaml::Bool(b) => b.to_string(),
                            Yaml::Number(n) => n.to_string(),
                            _ => {
                                return Err(invalid(format!(
                                    "env.{name} must be a string, number or boolean"
                                )));
                            }
                        };
                        self.overlay.insert(name.to_owned(), value);
                    }
                }
                (Some("env"), _) => return Err(invalid("env must be a mapping".into())),
                (Some(other), _) => tracing::warn!(
                    "overlay {}: key \"{other}\" is not supported and is ignored",
                    path.display()
                ),
                (None, _) => return Err(invalid("top-level keys must be strings".into())),
            }
        }
        Ok(())
    }
}
