//! Everything decided before the runtime starts: profile, overlays, the
//! launch environment and `DSH_HOME`.

use crate::cli::{Cli, Command};
use dsh_agent::{
    PermissionMode, Profile, ProfileKind, WEB_SEARCH_DEFAULT_TIMEOUT, WEB_SEARCH_TIMEOUT_VAR,
    WebSearch,
};
use dsh_llm::search::{SearchClient, SearchConfig};
use dsh_llm::{
    DEFAULT_ERROR_BODY_BYTES, DEFAULT_IDLE_TIMEOUT, ERROR_BODY_BYTES_VAR, ProviderEnv,
    ProviderRegistry, REPLY_BYTES_VAR, ReplyLimits, RetryPolicy,
};
use dsh_server::{HookSettings, McpSettings, ServerConfig};
use dsh_session::store::{Encoding, SessionStore};
use dsh_tools::{
    DEFAULT_FILE_MAX_BYTES, DEFAULT_SPILL_MAX_BYTES, DEFAULT_SPILL_SESSION_MAX_BYTES,
    FILE_MAX_BYTES_VAR, HiddenEnv, KEEP_TOOL_OUTPUT_VAR, LANDLOCK_ABI_MAX_VAR, NetworkAccess,
    SPILL_MAX_BYTES_VAR, SPILL_SESSION_MAX_BYTES_VAR, SandboxConfig, SpillLimits, ToolsConfig,
    parse_abi_max, sdk_minimal_tools, sdk_tools,
};
use serde_yaml_ng::Value as Yaml;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

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
    /// An overlay file is not YAML.
    #[error("Error: dsh: failed to parse overlay {path}: {message}")]
    ParseOverlay {
        /// The file, made absolute.
        path: PathBuf,
        /// The YAML error.
        message: String,
    },
    /// An overlay is neither a list of loader patch entries nor a mapping
    /// (an empty file included, as the official runtime refuses it).
    #[error("Error: dsh: overlay {path} must be a top-level YAML array of loader patch entries")]
    OverlayNotAList {
        /// The file, made absolute.
        path: PathBuf,
    },
    /// An entry of an overlay list is not a mapping.
    #[error("Error: dsh: overlay entry {entry} in {path} must be a mapping (a loader patch entry)")]
    OverlayEntryNotMapping {
        /// The file, made absolute.
        path: PathBuf,
        /// The entry's position, from 1.
        entry: usize,
    },
    /// The `env:` map of an overlay mapping is malformed.
    #[error("Error: dsh: invalid overlay {path}: {message}")]
    InvalidOverlay {
        /// The file, made absolute.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// `DSH_HOME/hooks.json` cannot be read or does not fit.
    #[error("Error: dsh: hooks {path}: {message}")]
    Hooks {
        /// The file.
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
    /// A numeric setting is not a number.
    #[error("dsh: {name} must be a whole number of milliseconds, got \"{value}\"")]
    NotMillis {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
    /// `DSH_CONTEXT_WINDOW` is not a whole number of tokens of at least
    /// [`MIN_CONTEXT_WINDOW`].
    #[error(
        "dsh: DSH_CONTEXT_WINDOW must be a whole number of tokens of at least {MIN_CONTEXT_WINDOW}, got \"{0}\""
    )]
    NotContextWindow(String),
    /// A `DSH_WORKFLOW_*` limit is not valid.
    #[error("dsh: {0}")]
    Workflow(dsh_workflow::LimitsError),
    /// A size setting is not a positive whole number of bytes.
    #[error("dsh: {name} must be a whole number of bytes above 0, got \"{value}\"")]
    NotBytes {
        /// The variable.
        name: &'static str,
        /// Its value.
        value: String,
    },
    /// A bad sandbox setting (`DSH_SANDBOX_NETWORK`, `DSH_WEB_FETCH_PRIVATE`,
    /// `DSH_LANDLOCK_ABI_MAX`).
    #[error("dsh: {0}")]
    Sandbox(String),
    /// The web search client cannot be set up: the variable that named its
    /// base URL (`DSH_WEB_SEARCH_BASE_URL` or `DEEPSEEK_SEARCH_BASE_URL`)
    /// and why.
    #[error("dsh: {0}: {1}")]
    WebSearch(&'static str, dsh_llm::search::SearchSetupError),
    /// `DSH_HOME` cannot be created.
    #[error("dsh: DSH_HOME: {0}")]
    Home(#[from] dsh_session::private_fs::PrivateFsError),
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
    /// Start the runtime (or run `dsh headless`).
    Run(Box<Launch>),
    /// Nothing to run (help was printed).
    Done,
}

/// A validated launch.
pub struct Launch {
    profile: Profile,
    providers: ProviderEnv,
    retry: RetryPolicy,
    /// The runtime process's cwd.
    pub process_cwd: PathBuf,
    /// The launch environment (process env, then overlays).
    env: LaunchEnv,
    sandbox: SandboxSettings,
    /// `DSH_FILE_MAX_BYTES`: the size limit of `read`, `edit` and `write`.
    file_max_bytes: u64,
    /// `DSH_SPILL_MAX_BYTES`, `DSH_SPILL_SESSION_MAX_BYTES` and
    /// `DSH_KEEP_TOOL_OUTPUT`: how much `bash` output is saved, and whether
    /// it outlives its session.
    spill: SpillLimits,
    /// Largest message a stdio MCP server may send
    /// (`DSH_MCP_MESSAGE_MAX_BYTES`).
    mcp_message_max_bytes: usize,
    /// The `sdk` profile's `web_search` tool.
    web_search: Option<WebSearch>,
    /// Command hooks of the launch: `DSH_HOME/hooks.json`, then the
    /// overlays' `hooks:`.
    hooks: dsh_hooks::HookSet,
}

/// The sandbox settings of the launch environment.
struct SandboxSettings {
    /// `DSH_SANDBOX_NETWORK`: `on` (default) or `off`.
    network: NetworkAccess,
    /// The providers' variables plus `DSH_SANDBOX_ENV_DENY`.
    hidden_env: HiddenEnv,
    /// `DSH_WEB_FETCH_PRIVATE`: `allow` or `deny`; by default denied
    /// exactly when the sandbox network is off.
    web_private_addresses: bool,
    /// `DSH_WEB_FETCH_MAX_BYTES`: most bytes of a fetched body read.
    web_max_bytes: Option<u64>,
    /// `DSH_WEB_FETCH_TIMEOUT_MS`: the time limit of one fetch.
    web_timeout_ms: Option<u64>,
    /// `DSH_LANDLOCK_ABI_MAX`: the highest Landlock ABI the sandbox may use
    /// (a test and diagnostic knob; only lowers the kernel's).
    abi_max: Option<u8>,
}

impl SandboxSettings {
    fn from_env(env: &LaunchEnv) -> Result<Self, LaunchError> {
        let network = match env.get("DSH_SANDBOX_NETWORK") {
            Some(value) => NetworkAccess::parse(&value).map_err(LaunchError::Sandbox)?,
            None => NetworkAccess::Open,
        };
        let web_private_addresses = match env.get("DSH_WEB_FETCH_PRIVATE").as_deref() {
            None => network == NetworkAccess::Open,
            Some("allow") => true,
            Some("deny") => false,
            Some(other) => {
                return Err(LaunchError::Sandbox(format!(
                    "DSH_WEB_FETCH_PRIVATE must be \"allow\" or \"deny\", got \"{other}\""
                )));
            }
        };
        let abi_max = env
            .get(LANDLOCK_ABI_MAX_VAR)
            .map(|value| parse_abi_max(&value).map_err(|err| LaunchError::Sandbox(err.to_string())))
            .transpose()?;
        if let Some(max) = abi_max {
            tracing::warn!(
                "{LANDLOCK_ABI_MAX_VAR}={max}: the sandbox uses Landlock ABI {max} at most, whatever the kernel offers (a test and diagnostic setting)"
            );
        }
        Ok(Self {
            network,
            abi_max,
            hidden_env: HiddenEnv::with_extra(&env.get("DSH_SANDBOX_ENV_DENY").unwrap_or_default()),
            web_private_addresses,
            web_max_bytes: env.bytes("DSH_WEB_FETCH_MAX_BYTES")?,
            web_timeout_ms: env.millis("DSH_WEB_FETCH_TIMEOUT_MS")?,
        })
    }
}

/// The smallest `DSH_CONTEXT_WINDOW` accepted, in tokens.
pub const MIN_CONTEXT_WINDOW: u64 = 4_096;

const APP_HELP: &str = "Usage: dsh --profile <sdk|sdk-minimal> [--patch <file>]...\n\n\
Serves the DeepSeek Harness SDK protocol (newline-delimited JSON-RPC 2.0) on stdin/stdout.\n\
Requires DSH_HOME. Diagnostics go to stderr; set DSH_LOG=debug for more.\n";

/// A stop signal, once the handlers are installed: resolves at SIGTERM
/// (`false`) or SIGINT (`true`, exit 130). `None` when they cannot be
/// installed. Must be called inside the runtime.
pub fn stop_signal() -> Option<impl std::future::Future<Output = bool>> {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return None;
    };
    Some(async move {
        tokio::select! {
            _ = term.recv() => false,
            _ = int.recv() => true,
        }
    })
}

/// The async runtime every command runs on (two workers).
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
}

impl Launch {
    /// Validates the command line, reads the overlays and checks `DSH_HOME`,
    /// creating it (0700) when it is missing.
    pub fn prepare(cli: &Cli) -> Result<Prepared, LaunchError> {
        // `headless` and `acp` run the sdk profile's server and, as
        // commands for people, default `DSH_HOME` to `~/.dsh`.
        let headless = matches!(
            cli.command,
            Some(Command::Headless(_) | Command::Acp(_) | Command::Web(_))
        );
        let name = match (&cli.command, cli.profile.as_deref()) {
            (Some(Command::Headless(_)), _) => "headless",
            (Some(Command::Acp(_)), _) => "acp",
            (Some(Command::Web(_)), _) => "web",
            (None, Some(name @ ("sdk" | "sdk-minimal"))) => name,
            (None, Some(name)) => return Err(LaunchError::UnknownProfile(name.to_owned())),
            (None, None) => return Err(LaunchError::NoProfile),
        };
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
        // The SDK profiles never fall back to ~/.dsh; a CLI user of
        // `headless` expects it.
        let home = match (env.get("DSH_HOME"), headless, env.get("HOME")) {
            (Some(home), _, _) => home,
            (None, true, Some(user_home)) => format!("{user_home}/.dsh"),
            (None, _, _) => return Err(LaunchError::NoHome(name.to_owned())),
        };
        let dsh_home = resolve_home(&home, &process_cwd, env.get("HOME").as_deref());
        crate::home::prepare(&dsh_home)?;
        let hooks = launch_hooks(&dsh_home, &env.hooks)?;
        let profile = if name != "sdk-minimal" {
            let mode = match env.get("DSH_PERMISSION_MODE") {
                Some(mode) => mode
                    .parse()
                    .map_err(|e: dsh_tools::ParsePermissionModeError| {
                        LaunchError::PermissionMode(e.0)
                    })?,
                None => PermissionMode::WorkspaceWrite,
            };
            let mut profile = Profile::sdk(mode);
            profile.skills_home = Some(dsh_home.join("skills"));
            if let Some(value) = env.get("DSH_MAX_TOKENS_AS_SUCCESS") {
                profile.max_tokens_as_success = !matches!(
                    value.trim().to_ascii_lowercase().as_str(),
                    "0" | "false" | "no" | "off"
                );
            }
            profile
        } else {
            Profile::sdk_minimal(env.get("DSH_SYSTEM_PROMPT"))
        };
        let mut profile = profile;
        if let Some(value) = env.get("DSH_CONTEXT_WINDOW") {
            profile.context_window = match value.trim().parse::<u64>() {
                Ok(window) if window >= MIN_CONTEXT_WINDOW => Some(window),
                _ => return Err(LaunchError::NotContextWindow(value)),
            };
        }
        profile.workflow = dsh_workflow::Limits::from_env().map_err(LaunchError::Workflow)?;
        let providers = ProviderEnv {
            dsh_home,
            deepseek_api_key: env.get("DEEPSEEK_API_KEY"),
            deepseek_base_url: env.get("DEEPSEEK_BASE_URL"),
            openai_base_url: env
                .get("DSH_OPENAI_BASE_URL")
                .or_else(|| env.get("OPENAI_BASE_URL")),
            openai_api_key: env
                .get("DSH_OPENAI_API_KEY")
                .or_else(|| env.get("OPENAI_API_KEY")),
            idle_timeout: env
                .millis("DSH_STREAM_IDLE_TIMEOUT_MS")?
                .map_or(DEFAULT_IDLE_TIMEOUT, Duration::from_millis),
            limits: ReplyLimits {
                reply_bytes: env.bytes(REPLY_BYTES_VAR)?,
                error_body_bytes: env
                    .bytes(ERROR_BODY_BYTES_VAR)?
                    .unwrap_or(DEFAULT_ERROR_BODY_BYTES),
            },
        };
        let defaults = RetryPolicy::default();
        let retry = RetryPolicy {
            initial_ms: env
                .millis("DSH_RETRY_INITIAL_MS")?
                .unwrap_or(defaults.initial_ms),
            cap_ms: env.millis("DSH_RETRY_MAX_MS")?.unwrap_or(defaults.cap_ms),
            ..defaults
        };
        let sandbox = SandboxSettings::from_env(&env)?;
        let file_max_bytes = env
            .bytes(FILE_MAX_BYTES_VAR)?
            .unwrap_or(DEFAULT_FILE_MAX_BYTES);
        let spill = SpillLimits {
            job_max: env
                .bytes(SPILL_MAX_BYTES_VAR)?
                .unwrap_or(DEFAULT_SPILL_MAX_BYTES),
            session_max: env
                .bytes(SPILL_SESSION_MAX_BYTES_VAR)?
                .unwrap_or(DEFAULT_SPILL_SESSION_MAX_BYTES),
            keep: env.get(KEEP_TOOL_OUTPUT_VAR).as_deref() == Some("1"),
        };
        let mcp_message_max_bytes = env
            .bytes(dsh_mcp::MESSAGE_MAX_BYTES_VAR)?
            .map_or(dsh_mcp::DEFAULT_MESSAGE_MAX_BYTES, |b| {
                usize::try_from(b).unwrap_or(usize::MAX)
            });
        let web_search = match profile.kind {
            ProfileKind::Sdk => Some(web_search(&env, &providers, &retry)?),
            ProfileKind::SdkMinimal => None,
        };
        let launch = Box::new(Self {
            profile,
            providers,
            retry,
            process_cwd,
            env,
            sandbox,
            file_max_bytes,
            spill,
            mcp_message_max_bytes,
            web_search,
            hooks,
        });
        Ok(Prepared::Run(launch))
    }

    /// `DSH_HOME`, absolute.
    pub fn dsh_home(&self) -> &Path {
        &self.providers.dsh_home
    }

    /// A launch-environment variable (blank counts as unset).
    pub fn var(&self, key: &str) -> Option<String> {
        self.env.get(key)
    }

    /// The server configuration of this launch.
    pub fn server_config(self) -> ServerConfig {
        let home = self.providers.dsh_home.clone();
        // Commands may never write DSH_HOME, wherever it lies (under /tmp,
        // inside the workspace): the sandbox mounts it read-only for them.
        let sandbox = SandboxConfig::from_current_exe()
            .protect(home.clone())
            .with_network(self.sandbox.network)
            .with_hidden_env(self.sandbox.hidden_env.clone())
            .with_abi_max(self.sandbox.abi_max);
        let registry = ProviderRegistry::new(self.providers);
        let registry_attachments = registry.attachments().clone();
        let mut tools_config = ToolsConfig::new(home.join("tool-output"))
            .with_sandbox(sandbox)
            .with_attachments(registry.attachments().clone());
        tools_config.web_private_addresses = self.sandbox.web_private_addresses;
        if let Some(bytes) = self.sandbox.web_max_bytes {
            tools_config.web_max_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        if let Some(ms) = self.sandbox.web_timeout_ms {
            tools_config.web_timeout = Duration::from_millis(ms);
        }
        tools_config.file_max_bytes = self.file_max_bytes;
        tools_config.spill = self.spill;
        let (encoding, mut tools) = match self.profile.kind {
            ProfileKind::Sdk => (Encoding::Zstd, sdk_tools(tools_config)),
            ProfileKind::SdkMinimal => (Encoding::Plain, sdk_minimal_tools(tools_config)),
        };
        if let Some(web_search) = self.web_search {
            tools.insert(std::sync::Arc::new(web_search));
        }
        let hooks = HookSettings {
            launch: self.hooks,
            hidden: self.sandbox.hidden_env.clone(),
            trust_project: self.env.get(TRUST_PROJECT_HOOKS_VAR).as_deref() == Some("1"),
        };
        ServerConfig {
            profile: std::sync::Arc::new(self.profile),
            store: SessionStore::new(home.clone()),
            encoding,
            tools: std::sync::Arc::new(tools),
            registry,
            retry: self.retry,
            process_cwd: self.process_cwd,
            approval_rules: self.env.approval_rules,
            mcp: McpSettings {
                servers: self.env.mcp_servers,
                options: dsh_mcp::ServerOptions {
                    message_max_bytes: self.mcp_message_max_bytes,
                    start_timeout: dsh_mcp::DEFAULT_START_TIMEOUT,
                    hidden_env: self.sandbox.hidden_env,
                },
                store: dsh_mcp::ResultStore {
                    attachments: registry_attachments,
                    spill_dir: home.join("tool-output"),
                },
            },
            editor: None,
            hooks,
        }
    }

    /// The route of a command's `--provider` and `--model`: the provider
    /// given, else `unset(scenario)` (whether `--model` names a scenario
    /// file); for `scripted` the model is `echo` or the scenario file made
    /// absolute, otherwise the model given or `deepseek-v4-flash`.
    pub fn route(
        &self,
        provider: Option<&str>,
        model: Option<&str>,
        unset: impl FnOnce(bool) -> &'static str,
    ) -> (String, String) {
        let cwd = &self.process_cwd;
        let scenario = model.is_some_and(|m| cwd.join(m).is_file());
        let provider = provider.map_or_else(|| unset(scenario).to_owned(), str::to_owned);
        let model = match (model, provider.as_str()) {
            (Some(model), "scripted") if model != "echo" => {
                cwd.join(model).to_string_lossy().into_owned()
            }
            (Some(model), _) => model.to_owned(),
            (None, "scripted") => "echo".to_owned(),
            (None, _) => dsh_protocol::methods::DEFAULT_MODEL.to_owned(),
        };
        (provider, model)
    }

    /// The route of a server command's new sessions (`dsh acp`, `dsh
    /// web`) after adding its `--mcp` files: `--provider`, else `scripted`
    /// when `--model` names a scenario file, else `deepseek-official`.
    pub fn server_route(
        &mut self,
        provider: Option<&str>,
        model: Option<&str>,
        mcp: &[PathBuf],
    ) -> Result<(String, String), String> {
        for file in mcp {
            self.add_mcp_file(&self.process_cwd.join(file))?;
        }
        Ok(self.route(provider, model, |scenario| {
            if scenario {
                "scripted"
            } else {
                dsh_protocol::methods::DEFAULT_PROVIDER
            }
        }))
    }

    /// Adds the servers of a `.mcp.json`-format file (`dsh headless
    /// --mcp`); a server named earlier wins.
    pub fn add_mcp_file(&mut self, path: &Path) -> Result<(), String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let json: serde_json::Value = serde_json::from_str(&text)
            .map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
        let lookup = |name: &str| self.env.get(name);
        let servers = dsh_mcp::config::from_file_map(&json, dsh_mcp::Source::Trusted, &lookup)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        self.env.mcp_servers =
            dsh_mcp::config::merge([std::mem::take(&mut self.env.mcp_servers), servers]);
        Ok(())
    }
}

/// The `web_search` tool of the launch: the search API root
/// (`DSH_WEB_SEARCH_BASE_URL`, else `DEEPSEEK_SEARCH_BASE_URL`), model (`DSH_WEB_SEARCH_MODEL`), answer
/// bound (`DSH_WEB_SEARCH_MAX_BYTES`) and time limit
/// (`DSH_WEB_SEARCH_TIMEOUT_MS`); the chat provider's key, error-body
/// bound and retry policy.
fn web_search(
    env: &LaunchEnv,
    providers: &ProviderEnv,
    retry: &RetryPolicy,
) -> Result<WebSearch, LaunchError> {
    let mut config = SearchConfig::new(providers.deepseek_api_key.clone());
    // dsh's own variable wins; the official runtime's comes next.
    let mut base_var = dsh_llm::search::BASE_URL_VAR;
    for var in [
        dsh_llm::search::BASE_URL_VAR,
        dsh_llm::search::OFFICIAL_BASE_URL_VAR,
    ] {
        if let Some(base) = env.get(var) {
            config.base_url = base.trim().to_owned();
            base_var = var;
            break;
        }
    }
    if let Some(model) = env.get(dsh_llm::search::MODEL_VAR) {
        config.model = model.trim().to_owned();
    }
    if let Some(bytes) = env.bytes(dsh_llm::search::MAX_BYTES_VAR)? {
        config.max_bytes = bytes;
    }
    config.error_body_bytes = providers.limits.error_body_bytes;
    config.retry = retry.clone();
    let timeout = env
        .millis(WEB_SEARCH_TIMEOUT_VAR)?
        .map_or(WEB_SEARCH_DEFAULT_TIMEOUT, Duration::from_millis);
    let client = SearchClient::new(config).map_err(|err| LaunchError::WebSearch(base_var, err))?;
    Ok(WebSearch::new(client, timeout))
}

/// `DSH_HOME` made absolute: `~` expanded, relative paths against the cwd.
fn resolve_home(home: &str, cwd: &Path, user_home: Option<&str>) -> PathBuf {
    let home = home.trim();
    let expanded = match (home.strip_prefix('~'), user_home) {
        (Some(rest), Some(user)) if rest.is_empty() || rest.starts_with('/') => {
            PathBuf::from(format!("{user}{rest}"))
        }
        _ => PathBuf::from(home),
    };
    cwd.join(expanded)
}

/// `DSH_TRUST_PROJECT_HOOKS=1`: run the workspace's hook files
/// (`.claude/settings.json`, `.claude/settings.local.json`,
/// `.codex/hooks.json`) without the client asking.
const TRUST_PROJECT_HOOKS_VAR: &str = "DSH_TRUST_PROJECT_HOOKS";

/// The hooks of the launch: `DSH_HOME/hooks.json` (Claude Code's
/// `settings.json` shape), then the overlays'.
fn launch_hooks(
    dsh_home: &Path,
    overlays: &dsh_hooks::HookSet,
) -> Result<dsh_hooks::HookSet, LaunchError> {
    let path = dsh_home.join("hooks.json");
    let error = |message: String| LaunchError::Hooks {
        path: path.clone(),
        message,
    };
    let mut hooks = dsh_hooks::HookSet::default();
    let read = dsh_hooks::config::read_json(&path).map_err(|err| match err {
        dsh_hooks::config::ConfigError::Read { message, .. } => error(message),
        other => error(other.to_string()),
    })?;
    if let Some(settings) = read {
        hooks
            .add_settings(dsh_hooks::SourceKind::Home, Some(&path), &settings)
            .map_err(|e| error(e.to_string()))?;
    }
    hooks.extend(overlays);
    Ok(hooks)
}

/// The launch environment: the process environment, then values from
/// overlays' `env:` maps for variables the process does not set. The
/// process environment itself is never modified.
#[derive(Debug, Default)]
struct LaunchEnv {
    overlay: BTreeMap<String, String>,
    /// Overlays' `approvalRules:` (dsh's format), lists concatenated.
    approval_rules: dsh_protocol::methods::ApprovalRules,
    /// Overlays' `mcpServers:` and `dsh headless --mcp` files; the first
    /// of a name wins.
    mcp_servers: Vec<dsh_mcp::ServerConfig>,
    /// Overlays' `hooks:` (Claude Code's `hooks` shape), in order.
    hooks: dsh_hooks::HookSet,
}

impl LaunchEnv {
    /// The value of `key`; blank values count as unset.
    fn get(&self, key: &str) -> Option<String> {
        std::env::var(key)
            .ok()
            .or_else(|| self.overlay.get(key).cloned())
            .filter(|v| !v.trim().is_empty())
    }

    /// A size setting in bytes (at least 1).
    fn bytes(&self, name: &'static str) -> Result<Option<u64>, LaunchError> {
        self.get(name)
            .map(|value| match value.trim().parse() {
                Ok(bytes) if bytes > 0 => Ok(bytes),
                _ => Err(LaunchError::NotBytes { name, value }),
            })
            .transpose()
    }

    fn millis(&self, name: &'static str) -> Result<Option<u64>, LaunchError> {
        self.get(name)
            .map(|value| {
                value
                    .trim()
                    .parse()
                    .map_err(|_| LaunchError::NotMillis { name, value })
            })
            .transpose()
    }

    /// Reads one overlay. The official runtime's format, a top-level list
    /// of loader patch entries (each a mapping; `!!js` values inside), is
    /// accepted; dsh has no plugin loader, so each entry is reported on
    /// stderr and ignored. A top-level mapping is dsh's own format: `env:`
    /// (a map of variable → scalar) is honoured, other keys are reported
    /// and ignored. Anything else (an empty file too) is refused with the
    /// official runtime's message.
    fn apply_overlay(&mut self, path: &Path) -> Result<(), LaunchError> {
        let text = std::fs::read_to_string(path).map_err(|source| LaunchError::ReadOverlay {
            path: path.to_owned(),
            source,
        })?;
        let invalid = |message: String| LaunchError::InvalidOverlay {
            path: path.to_owned(),
            message,
        };
        let yaml: Yaml = serde_yaml_ng::from_str(&text).map_err(|e| LaunchError::ParseOverlay {
            path: path.to_owned(),
            message: e.to_string(),
        })?;
        let map = match yaml {
            Yaml::Mapping(map) => map,
            Yaml::Sequence(entries) => {
                for (index, entry) in entries.iter().enumerate() {
                    if !entry.is_mapping() {
                        return Err(LaunchError::OverlayEntryNotMapping {
                            path: path.to_owned(),
                            entry: index + 1,
                        });
                    }
                }
                for index in 0..entries.len() {
                    tracing::warn!(
                        "overlay {}: loader patch entry {} is not supported by dsh and is ignored",
                        path.display(),
                        index + 1
                    );
                }
                return Ok(());
            }
            _ => {
                return Err(LaunchError::OverlayNotAList {
                    path: path.to_owned(),
                });
            }
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
                (Some("approvalRules"), rules) => {
                    let rules: dsh_protocol::methods::ApprovalRules =
                        serde_yaml_ng::from_value(rules)
                            .map_err(|e| invalid(format!("approvalRules: {e}")))?;
                    self.approval_rules.allow.extend(rules.allow);
                    self.approval_rules.deny.extend(rules.deny);
                }
                (Some("mcpServers"), servers) => {
                    let json = serde_json::to_value(&servers)
                        .map_err(|e| invalid(format!("mcpServers: {e}")))?;
                    let lookup = |name: &str| self.get(name);
                    let servers =
                        dsh_mcp::config::from_file_map(&json, dsh_mcp::Source::Trusted, &lookup)
                            .map_err(|e| invalid(e.to_string()))?;
                    self.mcp_servers =
                        dsh_mcp::config::merge([std::mem::take(&mut self.mcp_servers), servers]);
                }
                (Some("hooks"), hooks) => {
                    let json =
                        serde_json::to_value(&hooks).map_err(|e| invalid(format!("hooks: {e}")))?;
                    self.hooks
                        .add_hooks(dsh_hooks::SourceKind::Patch, Some(path), &json)
                        .map_err(|e| invalid(format!("hooks: {e}")))?;
                }
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
