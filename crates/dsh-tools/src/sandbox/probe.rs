//! What Landlock the running kernel offers.

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, RestrictSelfAttr, Ruleset,
    RulesetAttr, Scope,
};
use std::sync::OnceLock;

/// The lowest Landlock ABI the sandbox accepts. ABI 3 (Linux 6.2) is the
/// first that can deny `truncate(2)`; below it a confined command could
/// still empty any readable file, which would break the write restriction.
pub const MIN_LANDLOCK_ABI: u8 = 3;

/// The lowest Landlock ABI that can deny TCP `connect` and `bind`
/// (Linux 6.7), needed when the network of commands is off.
pub const NETWORK_LANDLOCK_ABI: u8 = 4;

/// The lowest Landlock ABI that scopes signals and abstract unix sockets
/// (Linux 6.12); below it commands get a PID namespace of their own.
pub const SCOPE_LANDLOCK_ABI: u8 = 6;

/// The Landlock support of the running kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LandlockSupport {
    /// Highest Landlock ABI verified to work (0: Landlock unavailable).
    /// Detection stops at ABI 7, the newest feature set this probe tests.
    pub abi: u8,
}

impl LandlockSupport {
    /// Probes the kernel once per process (the answer cannot change) by
    /// creating throwaway rulesets that require each ABI's features.
    pub fn detect() -> Self {
        static CACHE: OnceLock<LandlockSupport> = OnceLock::new();
        *CACHE.get_or_init(|| Self { abi: detect_abi() })
    }

    /// A kernel without Landlock (for tests of the fail-closed path).
    pub fn unavailable() -> Self {
        Self { abi: 0 }
    }

    /// Whether the sandboxed modes can be enforced.
    pub fn is_sufficient(&self) -> bool {
        self.abi >= MIN_LANDLOCK_ABI
    }

    /// Why the network cannot be denied, for refusal texts.
    pub(crate) fn network_shortfall(&self) -> String {
        format!(
            "DSH_SANDBOX_NETWORK=off needs Landlock ABI {NETWORK_LANDLOCK_ABI} but the kernel offers ABI {}",
            self.abi
        )
    }

    /// Why the support is not enough, for refusal texts.
    pub(crate) fn shortfall(&self) -> String {
        if self.abi == 0 {
            "Landlock is not available on this kernel".to_owned()
        } else {
            format!(
                "the kernel offers Landlock ABI {} but at least ABI {MIN_LANDLOCK_ABI} is needed",
                self.abi
            )
        }
    }
}

fn detect_abi() -> u8 {
    let fs = |abi: ABI| {
        Ruleset::default()
            .set_compatibility(CompatLevel::HardRequirement)
            .handle_access(AccessFs::from_all(abi))
            .and_then(|ruleset| ruleset.create())
            .is_ok()
    };
    if !fs(ABI::V1) {
        return 0;
    }
    let net = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessNet::from_all(ABI::V4))
        .and_then(|ruleset| ruleset.create())
        .is_ok();
    let scope = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .scope(Scope::from_all(ABI::V6))
        .and_then(|ruleset| ruleset.create())
        .is_ok();
    let logging = Ruleset::default()
        .set_compatibility(CompatLevel::HardRequirement)
        .handle_access(AccessFs::from_all(ABI::V1))
        .and_then(|ruleset| ruleset.create())
        .and_then(|created| created.log_subdomains(false))
        .is_ok();
    let checks = [
        (7, logging),
        (6, scope),
        (5, fs(ABI::V5)),
        (4, net),
        (3, fs(ABI::V3)),
        (2, fs(ABI::V2)),
    ];
    checks
        .iter()
        .find(|(_, ok)| *ok)
        .map(|(abi, _)| *abi)
        .unwrap_or(1)
}
