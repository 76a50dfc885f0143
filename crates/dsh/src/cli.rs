//! The launcher grammar: `dsh [--profile] <name> [--patch <file>]… [app-args…]`
//! `dsh headless [options] <task…|->` and `dsh acp [options]`.

use clap::{Args, Parser, Subcommand};
use std::ffi::OsString;
use std::path::PathBuf;

/// The environment variables `dsh --help` and `dsh headless --help` list.
const ENVIRONMENT: &str = "\
Environment:
  DSH_HOME                     Sessions, tool output and attachments (`dsh headless`: default ~/.dsh)
  DEEPSEEK_API_KEY             Key of the deepseek-official provider
  DEEPSEEK_BASE_URL            Its endpoint (default https://api.deepseek.com/anthropic)
  DSH_OPENAI_BASE_URL          Endpoint of the openai-compatible provider (or OPENAI_BASE_URL)
  DSH_OPENAI_API_KEY           Its key (or OPENAI_API_KEY)
  DSH_PERMISSION_MODE          sdk profile: read-only, workspace-write (default) or danger-full-access
  DSH_SYSTEM_PROMPT            sdk-minimal profile: the system prompt
  DSH_CONTEXT_WINDOW           Context window (tokens) compaction works against (default: the model's, 1000000)
  DSH_MAX_TOKENS_AS_SUCCESS    sdk profile: false makes a subagent cut at its token cap finish as an error
  DSH_SANDBOX_NETWORK          on (default) or off: TCP for commands run by bash
  DSH_SANDBOX_ENV_DENY         More variables removed from commands' environment (comma-separated, PREFIX* allowed)
  DSH_LANDLOCK_ABI_MAX         Test/diagnostic: highest Landlock ABI the sandbox uses (only lowers the kernel's)
  DSH_WEB_FETCH_PRIVATE        allow or deny loopback and private addresses in web_fetch
  DSH_WEB_FETCH_MAX_BYTES      Bytes web_fetch reads (default 5 MiB)
  DSH_WEB_FETCH_TIMEOUT_MS     Time a web_fetch call may take (default 30000)
  DSH_WEB_SEARCH_BASE_URL      web_search's Messages API root, posted to at <base>/messages (default https://api.deepseek.com/anthropic/v1; not DEEPSEEK_BASE_URL)
  DEEPSEEK_SEARCH_BASE_URL     The same, as the official runtime names it (DSH_WEB_SEARCH_BASE_URL wins when both are set)
  DSH_WEB_SEARCH_MODEL         Model that runs web searches (default deepseek-v4-flash)
  DSH_WEB_SEARCH_MAX_BYTES     Bytes of one search answer read (default 4 MiB)
  DSH_WEB_SEARCH_TIMEOUT_MS    Time a web_search call may take (default 60000)
  DSH_WORKFLOW_CPU_MS          CPU time of one workflow script (default 5000)
  DSH_WORKFLOW_MEMORY_BYTES    Memory of one workflow script (default 64 MiB)
  DSH_WORKFLOW_MAX_AGENTS      agent() calls of one workflow run (default 100)
  DSH_WORKFLOW_CONCURRENCY     Children of one workflow run working at once (1-8, default 1)
  DSH_FILE_MAX_BYTES           Largest file read, edit and write handle (default 64 MiB)
  DSH_SPILL_MAX_BYTES          Saved output of one bash job (default 64 MiB)
  DSH_SPILL_SESSION_MAX_BYTES  Saved bash output of one session (default 1 GiB)
  DSH_KEEP_TOOL_OUTPUT         1: keep saved bash output after its session
  DSH_MCP_MESSAGE_MAX_BYTES    Largest message of a stdio MCP server (default 16 MiB)
  DSH_TRUST_PROJECT_HOOKS      1: run the workspace's hook files (.claude/settings*.json, .codex/hooks.json)
                               Hooks (DSH_HOME/hooks.json, docs/hooks.md) see DSH_PROJECT_DIR,
                               CLAUDE_PROJECT_DIR and DSH_HOOK_EVENT, not the providers' keys
  DSH_MAX_REPLY_BYTES          Bytes of one provider reply (default from max_tokens)
  DSH_MAX_ERROR_BODY_BYTES     Bytes of a provider error body read (default 64 KiB)
  DSH_STREAM_IDLE_TIMEOUT_MS   Silence after which a provider stream fails
  DSH_RETRY_INITIAL_MS         First back-off of a retried model attempt
  DSH_RETRY_MAX_MS             Longest back-off
  DSH_LOG                      Diagnostics on stderr (tracing filter, e.g. info or dsh=debug)

The README's Limits table gives every bound and what happens when it is reached.";

/// dsh — a native runtime for the DeepSeek Harness SDK protocol.
///
/// Runs an agent runtime that speaks newline-delimited JSON-RPC 2.0 on
/// stdio, as the DeepSeek Harness Python SDK expects (`dsh_bin=`). The
/// profile may be given as the first word: `dsh sdk` = `dsh --profile sdk`.
/// `dsh headless --help` describes the options of `dsh headless`.
#[derive(Debug, Parser)]
#[command(
    name = "dsh",
    version,
    propagate_version = true,
    disable_help_subcommand = true,
    args_conflicts_with_subcommands = true,
    after_long_help = ENVIRONMENT
)]
pub struct Cli {
    /// Profile to run: `sdk` or `sdk-minimal` (`--profile headless` and
    /// `--profile acp` are the commands of those names).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// A YAML configuration overlay, applied in order; repeatable.
    #[arg(long = "patch", value_name = "FILE", global = true)]
    pub patches: Vec<PathBuf>,
    /// Print the JSON Schema of every method, notification and event of
    /// the protocol, then exit.
    #[arg(long, exclusive = true)]
    pub print_schema: bool,
    /// Arguments for the profile's app (the SDK profiles take only --help).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "APP_ARGS"
    )]
    pub app_args: Vec<String>,
    /// A command instead of a profile.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The commands that are not a profile.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one agent task and print the answer.
    ///
    /// Plain mode prints the final answer on stdout, reasoning and errors on
    /// stderr; `--json` prints one NDJSON record per step. Exits 0 only if
    /// the last turn completed. `DSH_HOME` defaults to `~/.dsh`.
    // `--version` prints `dsh <version>`, as for `dsh` itself.
    #[command(display_name = "dsh", after_long_help = ENVIRONMENT)]
    Headless(HeadlessArgs),
    /// Serve the Agent Client Protocol on stdio, for editors (Zed,
    /// JetBrains IDEs, Neovim, Emacs) and orchestrators.
    ///
    /// Each session runs on the same agent core, session store and sandbox
    /// as the SDK profile. `DSH_HOME` defaults to `~/.dsh`. docs/acp.md
    /// describes the methods and an editor configuration.
    #[command(display_name = "dsh", after_long_help = ENVIRONMENT)]
    Acp(AcpArgs),
    /// Serve the browser page: watch and drive sessions in a browser.
    ///
    /// Prints `dsh web: <url>?token=<token>` once listening; opening that
    /// URL sets a cookie that authenticates the browser for 30 days. Every
    /// session runs on the same agent core, session store and sandbox as
    /// the SDK profile. `DSH_HOME` defaults to `~/.dsh`. docs/web.md
    /// describes the page and its security.
    #[command(display_name = "dsh", after_long_help = ENVIRONMENT)]
    Web(WebArgs),
}

/// Arguments of `dsh web`.
#[derive(Debug, Args)]
pub struct WebArgs {
    /// The address to listen on: one IPv4 or IPv6 literal of a local
    /// interface (wildcard addresses are refused).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// The port; 0 lets the system pick a free one.
    #[arg(long, default_value_t = 0)]
    pub port: u16,
    /// Do not open the page in the default browser.
    #[arg(long)]
    pub no_open: bool,
    /// The root URL to print and open instead of the listening address (a
    /// proxy's, `http://` or `https://`); grants no trust (see
    /// --trusted-host).
    #[arg(long, value_name = "URL")]
    pub public_url: Option<String>,
    /// Another authority (`host` or `host:port`) accepted in `Host` and
    /// `Origin`; repeatable.
    #[arg(long = "trusted-host", value_name = "AUTHORITY")]
    pub trusted_hosts: Vec<String>,
    /// Model provider of new sessions (as for `dsh acp`).
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id of new sessions (as for `dsh acp`).
    #[arg(long)]
    pub model: Option<String>,
    /// MCP servers every session gets, from a `.mcp.json`-format file;
    /// repeatable.
    #[arg(long = "mcp", value_name = "FILE")]
    pub mcp: Vec<std::path::PathBuf>,
    /// Serve HTTPS: the PEM certificate chain (requires --tls-key).
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<std::path::PathBuf>,
    /// The unencrypted PEM private key (requires --tls-cert).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<std::path::PathBuf>,
}

/// Arguments of `dsh acp`.
#[derive(Debug, Args)]
pub struct AcpArgs {
    /// Model provider of new sessions: `scripted` when `--model` names a
    /// scenario file, else `deepseek-official`; or `openai-compatible`.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id of new sessions (default `deepseek-v4-flash`); for
    /// `scripted`, `echo` (the default) or a scenario file (relative paths
    /// resolve against the current directory).
    #[arg(long)]
    pub model: Option<String>,
    /// MCP servers every session gets, from a `.mcp.json`-format file;
    /// repeatable.
    #[arg(long = "mcp", value_name = "FILE")]
    pub mcp: Vec<std::path::PathBuf>,
}

/// Arguments of `dsh headless`.
#[derive(Debug, Args)]
pub struct HeadlessArgs {
    /// Print NDJSON records instead of the plain answer.
    #[arg(long)]
    pub json: bool,
    /// Continue this stored session instead of starting a new one.
    #[arg(long, value_name = "ID")]
    pub session_id: Option<String>,
    /// Model provider: `scripted` when `--model` names a scenario file,
    /// else `deepseek-official` when DEEPSEEK_API_KEY is set, else
    /// `scripted` (echo); or `openai-compatible`.
    #[arg(long)]
    pub provider: Option<String>,
    /// Model id; for `scripted`, `echo` or a scenario file (relative paths
    /// resolve against the current directory).
    #[arg(long)]
    pub model: Option<String>,
    /// MCP servers from a `.mcp.json`-format file (`{"mcpServers": {name:
    /// {command, args, env} | {type: "http", url, headers}}}`); repeatable.
    #[arg(long = "mcp", value_name = "FILE")]
    pub mcp: Vec<std::path::PathBuf>,
    /// The task: words, or `-` to read it from stdin.
    #[arg(required = true, allow_hyphen_values = true, trailing_var_arg = true)]
    pub task: Vec<String>,
}

impl Cli {
    /// Parses argv, turning a leading profile word into `--profile <word>`
    /// (a leading `headless` or `acp` stays the command, and the official
    /// spellings `--profile headless` and `--profile acp` become it).
    pub fn parse_args<I: IntoIterator<Item = OsString>>(args: I) -> Result<Self, clap::Error> {
        const COMMANDS: [&str; 3] = ["headless", "acp", "web"];
        let mut args: Vec<OsString> = args.into_iter().collect();
        if let Some(command) = COMMANDS
            .iter()
            .find(|c| args.get(1).is_some_and(|a| *a == *format!("--profile={c}")))
        {
            args[1] = OsString::from(command);
        } else if args.get(1).is_some_and(|a| a == "--profile")
            && args.get(2).is_some_and(|a| COMMANDS.iter().any(|c| a == c))
        {
            args.remove(1);
        }
        if let Some(first) = args.get(1)
            && !first.to_string_lossy().starts_with('-')
            && !COMMANDS.iter().any(|c| first == c)
        {
            args.insert(1, OsString::from("--profile"));
        }
        Self::try_parse_from(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::parse_args(
            std::iter::once("dsh")
                .chain(args.iter().copied())
                .map(OsString::from),
        )
    }

    #[test]
    fn profile_as_flag_or_first_word() {
        let cli = parse(&["--profile", "sdk", "--patch", "a.yml", "--patch", "b.yml"]).unwrap();
        assert_eq!(cli.profile.as_deref(), Some("sdk"));
        assert_eq!(
            cli.patches,
            vec![PathBuf::from("a.yml"), PathBuf::from("b.yml")]
        );
        let cli = parse(&["sdk-minimal", "--patch", "a.yml"]).unwrap();
        assert_eq!(cli.profile.as_deref(), Some("sdk-minimal"));
        assert_eq!(cli.patches.len(), 1);
    }

    #[test]
    fn unknown_words_become_app_args_and_profile_is_single() {
        let cli = parse(&["--profile", "sdk", "--foo"]).unwrap();
        assert_eq!(cli.app_args, vec!["--foo".to_owned()]);
        assert!(parse(&["--profile", "sdk", "--profile", "sdk"]).is_err());
    }

    fn headless(args: &[&str]) -> (Cli, HeadlessArgs) {
        let mut cli = parse(&[&["headless"], args].concat()).unwrap();
        match cli.command.take() {
            Some(Command::Headless(args)) => (cli, args),
            _ => panic!("no headless command in {args:?}"),
        }
    }

    #[test]
    fn headless_options_overlays_and_task_words() {
        let (cli, args) = headless(&[
            "--json",
            "--patch",
            "a.yml",
            "--session-id=s",
            "--provider",
            "scripted",
            "--model",
            "m.yaml",
            "-",
        ]);
        assert_eq!(cli.patches, vec![PathBuf::from("a.yml")]);
        assert!(args.json);
        assert_eq!(args.session_id.as_deref(), Some("s"));
        assert_eq!(args.provider.as_deref(), Some("scripted"));
        assert_eq!(args.model.as_deref(), Some("m.yaml"));
        assert_eq!(args.task, ["-"]);
        // Words after the first task word, options or not, are the task.
        let (_, args) = headless(&["--bogus", "say", "--json"]);
        assert!(!args.json);
        assert_eq!(args.task, ["--bogus", "say", "--json"]);
        let (_, args) = headless(&["--", "--json"]);
        assert_eq!(args.task, ["--json"]);
        // The official spelling of the command.
        for spelling in [&["--profile", "headless"][..], &["--profile=headless"]] {
            let mut cli = parse(&[spelling, &["--json", "hi"]].concat()).unwrap();
            let Some(Command::Headless(args)) = cli.command.take() else {
                panic!("{spelling:?} is not the headless command");
            };
            assert!(args.json && cli.profile.is_none());
            assert_eq!(args.task, ["hi"]);
        }
    }

    #[test]
    fn acp_options_and_its_official_spellings() {
        for spelling in [&["acp"][..], &["--profile", "acp"], &["--profile=acp"]] {
            let mut cli =
                parse(&[spelling, &["--model", "s.yaml", "--mcp", "m.json"]].concat()).unwrap();
            let Some(Command::Acp(args)) = cli.command.take() else {
                panic!("{spelling:?} is not the acp command");
            };
            assert!(cli.profile.is_none());
            assert_eq!(args.model.as_deref(), Some("s.yaml"));
            assert_eq!(args.mcp, [PathBuf::from("m.json")]);
        }
        let cli = parse(&["acp", "--patch", "a.yml"]).unwrap();
        assert_eq!(cli.patches, [PathBuf::from("a.yml")]);
        assert!(parse(&["acp", "--bogus"]).is_err());
    }

    #[test]
    fn print_schema_stands_alone() {
        let cli = parse(&["--print-schema"]).unwrap();
        assert!(cli.print_schema && cli.profile.is_none() && cli.command.is_none());
        assert!(!parse(&["sdk"]).unwrap().print_schema);
        assert!(parse(&["--print-schema", "--profile", "sdk"]).is_err());
    }

    #[test]
    fn headless_needs_a_task_and_is_no_profile() {
        assert!(parse(&["headless"]).is_err());
        assert!(parse(&["headless", "--json", "--json", "hi"]).is_err());
        // After a launcher option `headless` is an app argument, as before.
        let cli = parse(&["--profile", "sdk", "headless"]).unwrap();
        assert!(cli.command.is_none());
        assert_eq!(cli.app_args, ["headless"]);
    }
}
