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

/// The launch variable that caps the Landlock ABI the sandbox uses: a test
/// and diagnostic knob that shows what dsh does on an older kernel. It can
/// only lower the ABI the kernel offers, never raise it. The runtime reads
/// it once at launch and hands the cap to the launcher as an argument; the
/// launcher and the commands never read it from their environment.
pub const LANDLOCK_ABI_MAX_VAR: &str = "DSH_LANDLOCK_ABI_MAX";

/// A `DSH_LANDLOCK_ABI_MAX` value that is not a whole number from 0 to 255.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "DSH_LANDLOCK_ABI_MAX must be a whole number from 0 to 255 (the highest Landlock ABI the sandbox may use), got \"{0}\""
)]
pub struct AbiMaxError(pub String);

/// Reads a `DSH_LANDLOCK_ABI_MAX` value: decimal digits only (surrounding
/// blanks allowed), 0 to 255. 0 behaves as a kernel without Landlock.
pub fn parse_abi_max(value: &str) -> Result<u8, AbiMaxError> {
    let digits = value.trim();
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AbiMaxError(value.to_owned()));
    }
    digits.parse().map_err(|_| AbiMaxError(value.to_owned()))
}

/// The Landlock support the sandbox works with: what the kernel offers,
/// possibly lowered by [`LANDLOCK_ABI_MAX_VAR`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LandlockSupport {
    /// Highest Landlock ABI in use (0: Landlock unavailable). Detection
    /// stops at ABI 7, the newest feature set this probe tests.
    pub abi: u8,
    /// The kernel's ABI, when a cap lowered [`abi`](Self::abi) below it.
    pub lowered_from: Option<u8>,
}

impl LandlockSupport {
    /// Probes the kernel once per process (the answer cannot change) by
    /// creating throwaway rulesets that require each ABI's features.
    pub fn detect() -> Self {
        static CACHE: OnceLock<LandlockSupport> = OnceLock::new();
        *CACHE.get_or_init(|| Self::offering(detect_abi()))
    }

    /// A kernel that offers `abi` (for tests).
    pub fn offering(abi: u8) -> Self {
        Self {
            abi,
            lowered_from: None,
        }
    }

    /// A kernel without Landlock (for tests of the fail-closed path).
    pub fn unavailable() -> Self {
        Self::offering(0)
    }

    /// This support with its ABI lowered to `max` when `max` is below it;
    /// never raised.
    pub fn capped(self, max: Option<u8>) -> Self {
        match max {
            Some(max) if max < self.abi => Self {
                abi: max,
                lowered_from: Some(self.lowered_from.unwrap_or(self.abi)),
            },
            _ => self,
        }
    }

    /// Whether the sandboxed modes can be enforced.
    pub fn is_sufficient(&self) -> bool {
        self.abi >= MIN_LANDLOCK_ABI
    }

    /// What is offered, for refusal texts: the kernel's ABI, or the cap
    /// and the kernel's ABI.
    fn offered(&self) -> String {
        match self.lowered_from {
            Some(kernel) => format!(
                "{LANDLOCK_ABI_MAX_VAR}={} lowers the kernel's Landlock ABI {kernel} to ABI {}",
                self.abi, self.abi
            ),
            None => format!("the kernel offers Landlock ABI {}", self.abi),
        }
    }

    /// Why the network cannot be denied, for refusal texts.
    pub(crate) fn network_shortfall(&self) -> String {
        format!(
            "DSH_SANDBOX_NETWORK=off needs Landlock ABI {NETWORK_LANDLOCK_ABI} but {}",
            self.offered()
        )
    }

    /// Why the support is not enough, for refusal texts.
    pub(crate) fn shortfall(&self) -> String {
        if self.abi == 0 && self.lowered_from.is_none() {
            "Landlock is not available on this kernel".to_owned()
        } else {
            format!(
                "{} but at least ABI {MIN_LANDLOCK_ABI} is needed",
                self.offered()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_only_lowers() {
        let kernel = LandlockSupport::offering(6);
        assert_eq!(kernel.capped(None), kernel);
        assert_eq!(kernel.capped(Some(6)), kernel);
        assert_eq!(kernel.capped(Some(200)), kernel);
        let low = kernel.capped(Some(4));
        assert_eq!((low.abi, low.lowered_from), (4, Some(6)));
        assert_eq!(
            low.capped(Some(2)).lowered_from,
            Some(6),
            "the kernel's ABI"
        );
        assert_eq!(low.capped(Some(5)), low, "a second cap cannot raise");
        assert_eq!(LandlockSupport::unavailable().capped(Some(3)).abi, 0);
    }

    #[test]
    fn cap_values_are_whole_numbers_up_to_255() {
        assert_eq!(parse_abi_max("0"), Ok(0));
        assert_eq!(parse_abi_max(" 5\n"), Ok(5));
        assert_eq!(parse_abi_max("255"), Ok(255));
        for bad in ["", " ", "-1", "+3", "3.0", "abc", "256", "0x3"] {
            let err = parse_abi_max(bad).err();
            assert_eq!(err, Some(AbiMaxError(bad.to_owned())), "{bad:?}");
        }
        assert_eq!(
            AbiMaxError("x".to_owned()).to_string(),
            "DSH_LANDLOCK_ABI_MAX must be a whole number from 0 to 255 (the highest Landlock ABI the sandbox may use), got \"x\""
        );
    }

    #[test]
    fn refusals_say_whether_the_kernel_or_the_cap_is_short() {
        assert_eq!(
            LandlockSupport::unavailable().shortfall(),
            "Landlock is not available on this kernel"
        );
        assert_eq!(
            LandlockSupport::offering(2).shortfall(),
            "the kernel offers Landlock ABI 2 but at least ABI 3 is needed"
        );
        assert_eq!(
            LandlockSupport::offering(7).capped(Some(0)).shortfall(),
            "DSH_LANDLOCK_ABI_MAX=0 lowers the kernel's Landlock ABI 7 to ABI 0 but at least ABI 3 is needed"
        );
        assert_eq!(
            LandlockSupport::offering(7)
                .capped(Some(3))
                .network_shortfall(),
            "DSH_SANDBOX_NETWORK=off needs Landlock ABI 4 but DSH_LANDLOCK_ABI_MAX=3 lowers the kernel's Landlock ABI 7 to ABI 3"
        );
    }
}
