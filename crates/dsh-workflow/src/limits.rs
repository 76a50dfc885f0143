//! The resource limits of one workflow run and how they are read from the
//! environment.

use std::time::Duration;

/// The resource limits of one workflow run.
///
/// The CPU, memory, agent and concurrency limits can be set by the environment (see
/// [`Limits::from_env`]); the result and log limits only in code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    /// CPU time the script may use (the engine thread's CPU time; time spent
    /// blocked waiting for agents does not count).
    pub cpu: Duration,
    /// Memory the QuickJS runtime may allocate, in bytes.
    pub memory_bytes: usize,
    /// How many `agent()` calls one run may make.
    pub max_agents: usize,
    /// The largest return value, measured as its pretty-printed JSON, in bytes.
    pub max_result_bytes: usize,
    /// The total size of the log lines one run may send, in bytes. Each line
    /// is also cut to [`Limits::MAX_LOG_LINE_BYTES`]. Once a line would pass
    /// the total, it and every later line are dropped and a single marker
    /// line says so (earlier lines were already delivered to the host, so
    /// the oldest are the ones kept).
    pub max_log_bytes: usize,
    /// How many of the run's children may work at once (the host's
    /// business: the engine only carries it). The official runtime runs
    /// them one at a time.
    pub concurrency: usize,
}

/// A limit in the environment that could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LimitsError {
    /// The variable is set to something that is not a valid value.
    #[error("{var}={value:?} is not valid: {reason}")]
    Invalid {
        /// The environment variable.
        var: &'static str,
        /// Its value as found (lossily decoded).
        value: String,
        /// What a valid value looks like.
        reason: String,
    },
}

impl Limits {
    /// The environment variable for [`Limits::cpu`], in milliseconds (default 5000).
    pub const CPU_MS_VAR: &str = "DSH_WORKFLOW_CPU_MS";
    /// The environment variable for [`Limits::memory_bytes`] (default 64 MiB, at least 1 MiB).
    pub const MEMORY_BYTES_VAR: &str = "DSH_WORKFLOW_MEMORY_BYTES";
    /// The environment variable for [`Limits::max_agents`] (default 100).
    pub const MAX_AGENTS_VAR: &str = "DSH_WORKFLOW_MAX_AGENTS";

    /// The environment variable for [`Limits::concurrency`] (default 1, at
    /// most [`Limits::MAX_CONCURRENCY`]).
    pub const CONCURRENCY_VAR: &str = "DSH_WORKFLOW_CONCURRENCY";
    /// The most children a run may keep working at once (the most children
    /// a parent may run).
    pub const MAX_CONCURRENCY: usize = 8;

    /// The default CPU time, in milliseconds.
    pub const DEFAULT_CPU_MS: u64 = 5000;
    /// The default memory limit, in bytes.
    pub const DEFAULT_MEMORY_BYTES: usize = 64 * 1024 * 1024;
    /// The smallest memory limit accepted, in bytes (the runtime itself
    /// needs a few hundred KiB).
    pub const MIN_MEMORY_BYTES: usize = 1024 * 1024;
    /// The default number of `agent()` calls per run.
    pub const DEFAULT_MAX_AGENTS: usize = 100;
    /// The default limit on the return value's pretty JSON, in bytes.
    pub const DEFAULT_MAX_RESULT_BYTES: usize = 1024 * 1024;
    /// The default limit on the total log output of a run, in bytes.
    pub const DEFAULT_MAX_LOG_BYTES: usize = 64 * 1024;
    /// The longest single log line, in bytes; a longer line is cut.
    pub const MAX_LOG_LINE_BYTES: usize = 4 * 1024;

    /// The defaults, overridden by [`Limits::CPU_MS_VAR`],
    /// [`Limits::MEMORY_BYTES_VAR`], [`Limits::MAX_AGENTS_VAR`] and
    /// [`Limits::CONCURRENCY_VAR`] when set
    /// (an empty variable counts as unset).
    pub fn from_env() -> Result<Self, LimitsError> {
        Self::from_lookup(|var| std::env::var_os(var))
    }

    /// [`Limits::from_env`] with the environment given as a function.
    fn from_lookup(
        lookup: impl Fn(&str) -> Option<std::ffi::OsString>,
    ) -> Result<Self, LimitsError> {
        let mut limits = Self::default();
        if let Some(ms) = read_number(
            &lookup,
            Self::CPU_MS_VAR,
            1,
            "a positive number of milliseconds",
        )? {
            limits.cpu = Duration::from_millis(ms);
        }
        if let Some(bytes) = read_number(
            &lookup,
            Self::MEMORY_BYTES_VAR,
            Self::MIN_MEMORY_BYTES as u64,
            "a number of bytes, at least 1048576 (1 MiB)",
        )? {
            limits.memory_bytes = usize::try_from(bytes).unwrap_or(usize::MAX);
        }
        if let Some(agents) = read_number(
            &lookup,
            Self::MAX_AGENTS_VAR,
            0,
            "a number of agent calls (0 or more)",
        )? {
            limits.max_agents = usize::try_from(agents).unwrap_or(usize::MAX);
        }
        if let Some(slots) = read_number(
            &lookup,
            Self::CONCURRENCY_VAR,
            1,
            "a whole number from 1 to 8",
        )? {
            if slots > Self::MAX_CONCURRENCY as u64 {
                return Err(LimitsError::Invalid {
                    var: Self::CONCURRENCY_VAR,
                    value: slots.to_string(),
                    reason: "expected a whole number from 1 to 8".to_owned(),
                });
            }
            limits.concurrency = usize::try_from(slots).unwrap_or(1);
        }
        Ok(limits)
    }
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu: Duration::from_millis(Self::DEFAULT_CPU_MS),
            memory_bytes: Self::DEFAULT_MEMORY_BYTES,
            max_agents: Self::DEFAULT_MAX_AGENTS,
            max_result_bytes: Self::DEFAULT_MAX_RESULT_BYTES,
            max_log_bytes: Self::DEFAULT_MAX_LOG_BYTES,
            concurrency: 1,
        }
    }
}

/// Reads `var` as a decimal integer of at least `min`; `None` when unset or empty.
fn read_number(
    lookup: &impl Fn(&str) -> Option<std::ffi::OsString>,
    var: &'static str,
    min: u64,
    expected: &str,
) -> Result<Option<u64>, LimitsError> {
    let Some(raw) = lookup(var) else {
        return Ok(None);
    };
    let invalid = |value: String| LimitsError::Invalid {
        var,
        value,
        reason: format!("expected {expected}"),
    };
    let Some(text) = raw.to_str() else {
        return Err(invalid(raw.to_string_lossy().into_owned()));
    };
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Ok(None);
    }
    match trimmed.parse::<u64>() {
        Ok(n) if n >= min => Ok(Some(n)),
        _ => Err(invalid(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::ffi::OsString;

    fn with(vars: &[(&str, &str)]) -> Result<Limits, LimitsError> {
        let map: HashMap<String, OsString> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), OsString::from(v)))
            .collect();
        Limits::from_lookup(|var| map.get(var).cloned())
    }

    #[test]
    fn defaults_when_unset() {
        let limits = with(&[]).unwrap();
        assert_eq!(limits, Limits::default());
        assert_eq!(limits.cpu, Duration::from_millis(5000));
        assert_eq!(limits.memory_bytes, 64 * 1024 * 1024);
        assert_eq!(limits.max_agents, 100);
        assert_eq!(limits.max_result_bytes, 1024 * 1024);
        assert_eq!(limits.max_log_bytes, 64 * 1024);
        assert_eq!(limits.concurrency, 1);
    }

    #[test]
    fn concurrency_is_one_to_eight() {
        for bad in ["0", "9", "two"] {
            let err = with(&[(Limits::CONCURRENCY_VAR, bad)]).unwrap_err();
            assert!(
                err.to_string().starts_with("DSH_WORKFLOW_CONCURRENCY=")
                    && err
                        .to_string()
                        .ends_with("expected a whole number from 1 to 8"),
                "{err}"
            );
        }
    }

    #[test]
    fn values_are_read() {
        let limits = with(&[
            (Limits::CPU_MS_VAR, "250"),
            (Limits::MEMORY_BYTES_VAR, "2097152"),
            (Limits::MAX_AGENTS_VAR, "3"),
            (Limits::CONCURRENCY_VAR, "8"),
        ])
        .unwrap();
        assert_eq!(limits.concurrency, 8);
        assert_eq!(limits.cpu, Duration::from_millis(250));
        assert_eq!(limits.memory_bytes, 2 * 1024 * 1024);
        assert_eq!(limits.max_agents, 3);
        assert_eq!(
            with(&[(Limits::CPU_MS_VAR, "")]).unwrap(),
            Limits::default()
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        let err = with(&[(Limits::CPU_MS_VAR, "fast")]).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("DSH_WORKFLOW_CPU_MS=\"fast\" is not valid"),
            "{err}"
        );
        let err = with(&[(Limits::CPU_MS_VAR, "0")]).unwrap_err();
        assert!(err.to_string().contains("DSH_WORKFLOW_CPU_MS"), "{err}");
        let err = with(&[(Limits::MEMORY_BYTES_VAR, "1000")]).unwrap_err();
        assert!(
            err.to_string().contains("DSH_WORKFLOW_MEMORY_BYTES"),
            "{err}"
        );
        assert!(err.to_string().contains("1 MiB"), "{err}");
        let err = with(&[(Limits::MAX_AGENTS_VAR, "-1")]).unwrap_err();
        assert!(err.to_string().contains("DSH_WORKFLOW_MAX_AGENTS"), "{err}");
    }
}
