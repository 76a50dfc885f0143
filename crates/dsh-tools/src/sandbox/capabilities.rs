//! Dropping every capability before the command runs.

use rustix::thread::{CapabilitySet, CapabilitySets};

/// Empties the bounding, ambient, effective, permitted and inheritable
/// capability sets of this thread, so that a command started as root
/// keeps none of root's powers (no `CAP_SYS_ADMIN`, `CAP_DAC_OVERRIDE`,
/// `CAP_SYS_MODULE`, …) across `exec`. Capabilities this kernel does not
/// know are skipped.
pub(crate) fn drop_all() -> Result<(), String> {
    let current = rustix::thread::capabilities(None)
        .map_err(|err| format!("cannot read the capabilities: {err}"))?;
    if current.effective.is_empty() && current.permitted.is_empty() {
        // An unprivileged process: nothing to drop, and `no_new_privs`
        // (set with the Landlock ruleset) keeps `exec` from granting any.
        return Ok(());
    }
    for capability in CapabilitySet::all().iter() {
        match rustix::thread::remove_capability_from_bounding_set(capability) {
            Ok(()) | Err(rustix::io::Errno::INVAL) => {}
            Err(err) => return Err(format!("cannot drop a capability: {err}")),
        }
    }
    rustix::thread::clear_ambient_capability_set()
        .map_err(|err| format!("cannot clear the ambient capabilities: {err}"))?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: CapabilitySet::empty(),
            permitted: CapabilitySet::empty(),
            inheritable: CapabilitySet::empty(),
        },
    )
    .map_err(|err| format!("cannot drop the capabilities: {err}"))
}
