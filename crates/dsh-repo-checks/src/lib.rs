//! Checks of the repository itself, run by `cargo test`: the module
//! layering of every crate (`tests/layering.rs`) and the relative links and
//! code paths the docs name (`tests/docs.rs`). The crate has no code of its
//! own: it is where those tests live without depending on the product.

/// The repository's root (two levels above this crate's manifest).
pub fn repo_root() -> std::path::PathBuf {
    let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest.to_path_buf(), std::path::Path::to_path_buf)
}
