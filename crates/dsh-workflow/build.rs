//! Links the glibc compatibility shim for x86_64 GNU/Linux (see
//! `compat/hypot.c`): QuickJS's `hypot` must not need glibc 2.35.

fn main() {
    println!("cargo:rerun-if-changed=compat/hypot.c");
    let target = std::env::var("TARGET").unwrap_or_default();
    if target == "x86_64-unknown-linux-gnu" {
        cc::Build::new()
            .file("compat/hypot.c")
            .link_lib_modifier("+whole-archive")
            .compile("dsh_glibc_compat");
    }
}
