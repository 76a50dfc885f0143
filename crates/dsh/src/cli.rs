//! The launcher grammar: `dsh [--profile] <name> [--patch <file>]… [app-args…]`.

use clap::Parser;
use std::ffi::OsString;
use std::path::PathBuf;

/// dsh — a native runtime for the DeepSeek Harness SDK protocol.
///
/// Runs an agent runtime that speaks newline-delimited JSON-RPC 2.0 on
/// stdio, as the DeepSeek Harness Python SDK expects (`dsh_bin=`). The
/// profile may be given as the first word: `dsh sdk` = `dsh --profile sdk`.
#[derive(Debug, Parser)]
#[command(name = "dsh", version, disable_help_subcommand = true)]
pub struct Cli {
    /// Profile to run: `sdk` or `sdk-minimal`.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// A YAML configuration overlay, applied in order; repeatable.
    #[arg(long = "patch", value_name = "FILE")]
    pub patches: Vec<PathBuf>,
    /// Arguments for the profile's app (the SDK profiles take only --help).
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "APP_ARGS"
    )]
    pub app_args: Vec<String>,
}

impl Cli {
    /// Parses argv, turning a leading profile word into `--profile <word>`.
    pub fn parse_args<I: IntoIterator<Item = OsString>>(args: I) -> Result<Self, clap::Error> {
        let mut args: Vec<OsString> = args.into_iter().collect();
        if let Some(first) = args.get(1)
            && !first.to_string_lossy().starts_with('-')
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
        let cli = parse(&["--profile", "sdk", "--patch", "a.yml", "--patch", "b.yml"])
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cli.profile.as_deref(), Some("sdk"));
        assert_eq!(
            cli.patches,
            vec![PathBuf::from("a.yml"), PathBuf::from("b.yml")]
        );
        let cli = parse(&["sdk-minimal", "--patch", "a.yml"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cli.profile.as_deref(), Some("sdk-minimal"));
        assert_eq!(cli.patches.len(), 1);
    }

    #[test]
    fn unknown_words_become_app_args_and_profile_is_single() {
        let cli = parse(&["--profile", "sdk", "--foo"]).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cli.app_args, vec!["--foo".to_owned()]);
        assert!(parse(&["--profile", "sdk", "--profile", "sdk"]).is_err());
    }
}
