//! Checks of the repository itself, run by `cargo test`: the module
//! layering of every crate (`tests/layering.rs`) and the relative links and
//! code paths the docs name (`tests/docs.rs`); and [`skip`], how a test
//! that cannot run on a machine says so (a failure under CI). It depends on
//! nothing of the product.

/// The repository's root (two levels above this crate's manifest).
pub fn repo_root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest.to_path_buf(), std::path::Path::to_path_buf)
}

/// Skips the calling test for `reason` (the machine cannot run it: not
/// root, no Landlock, no `mount`), visibly: under `CI` (the variable set
/// and not empty) a skip is a failure, so it panics; elsewhere it prints
/// `SKIPPED: <reason>` on stderr and appends that line to the file named by
/// `DSH_TEST_SKIPS` (the test command lists that file after the tests, so
/// `cargo test`'s captured output does not hide the skip). The caller
/// returns right after.
pub fn skip(reason: &str) {
    let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    let record = std::env::var_os("DSH_TEST_SKIPS").map(std::path::PathBuf::from);
    skip_with(ci, record.as_deref(), reason);
}

/// [`skip`] with its environment given: panics when `ci`, else prints the
/// skip and appends it to `record`.
fn skip_with(ci: bool, record: Option<&std::path::Path>, reason: &str) {
    if ci {
        panic!("{reason}: a test may not skip under CI");
    }
    let line = format!("SKIPPED: {reason}");
    eprintln!("{line}");
    if let Some(path) = record {
        use std::io::Write;
        let appended = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .and_then(|mut file| writeln!(file, "{line}"));
        if let Err(err) = appended {
            eprintln!(
                "the skip could not be recorded in {}: {err}",
                path.display()
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skip_fails_under_ci_and_is_recorded_elsewhere() {
        let under_ci = std::panic::catch_unwind(|| skip_with(true, None, "no Landlock"));
        assert!(under_ci.is_err());
        let path = std::env::temp_dir().join(format!("dsh-skips-{}.txt", std::process::id()));
        let _ = std::fs::remove_file(&path);
        skip_with(false, Some(&path), "not root");
        skip_with(false, Some(&path), "no mount");
        let recorded = std::fs::read_to_string(&path).unwrap_or_default();
        let _ = std::fs::remove_file(&path);
        assert_eq!(recorded, "SKIPPED: not root\nSKIPPED: no mount\n");
    }
}
