//! Variables that commands never see: the runtime's own credentials.

use std::ffi::OsStr;

/// Every variable the providers read; hidden from commands by default.
pub const PROVIDER_VARIABLES: [&str; 6] = [
    "DEEPSEEK_API_KEY",
    "DEEPSEEK_BASE_URL",
    "DSH_OPENAI_API_KEY",
    "DSH_OPENAI_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
];

/// A deny-list of environment variable names, removed from the environment
/// of every command the tools start. Entries are exact names or prefixes
/// ending in `*` (`AWS_*`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenEnv {
    patterns: Vec<String>,
}

impl Default for HiddenEnv {
    /// The providers' variables (`PROVIDER_VARIABLES`).
    fn default() -> Self {
        Self {
            patterns: PROVIDER_VARIABLES.iter().map(|s| (*s).to_owned()).collect(),
        }
    }
}

impl HiddenEnv {
    /// The default list plus the comma-separated names or `PREFIX*`
    /// patterns of `extra` (`DSH_SANDBOX_ENV_DENY`); blanks are skipped.
    pub fn with_extra(extra: &str) -> Self {
        let mut hidden = Self::default();
        hidden.patterns.extend(
            extra
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty() && *p != "*")
                .map(str::to_owned),
        );
        hidden
    }

    /// Whether the variable `name` is hidden.
    pub fn hides(&self, name: &OsStr) -> bool {
        let Some(name) = name.to_str() else {
            return false;
        };
        self.patterns
            .iter()
            .any(|pattern| match pattern.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => name == pattern,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn provider_credentials_and_extra_patterns_are_hidden() {
        let hidden = HiddenEnv::with_extra(" AWS_*, GH_TOKEN ,,*");
        for name in [
            "DEEPSEEK_API_KEY",
            "OPENAI_API_KEY",
            "AWS_SECRET",
            "GH_TOKEN",
        ] {
            assert!(hidden.hides(OsStr::new(name)), "{name}");
        }
        for name in ["PATH", "HOME", "GH_TOKEN2", "XAWS_A", "DEEPSEEK_API_KEY_X"] {
            assert!(!hidden.hides(OsStr::new(name)), "{name}");
        }
        assert!(!HiddenEnv::default().hides(OsStr::new("AWS_SECRET")));
    }
}
