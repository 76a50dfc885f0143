//! The mount view of a confined command: a private mount namespace in
//! which every mount is read-only except the writable roots, and the
//! protected directories are read-only even inside those.
//!
//! Why mounts and not a seccomp filter: Landlock does not cover metadata
//! (`chmod`, `chown`, `utime`, xattrs), and a system-call filter sees only
//! numbers and pointers, not paths — it could deny `chmod` everywhere
//! (breaking `chmod +x` in the workspace) or trust a racy path check. A
//! read-only mount makes the kernel refuse every change of an inode below
//! it (`EROFS`), by any system call present or future (`fchmodat2`,
//! `setxattrat`, io_uring), and Landlock forbids a confined process to
//! remount or unmount anything. The same mechanism denies `DSH_HOME` where
//! Landlock, which can only grant, cannot: inside a writable root such as
//! `/tmp` or the workspace.

use rustix::mount::{MountFlags, MountPropagationFlags};
use rustix::thread::UnshareFlags;
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};

/// Enters a new mount namespace (inside a new user namespace when the
/// process is not privileged) and makes every mount read-only except
/// `writable` (existing directories, already canonical), with each of
/// `protected` read-only even inside a writable root. Must run while the
/// process has a single thread.
pub(crate) fn isolate(writable: &[PathBuf], protected: &[PathBuf]) -> Result<(), String> {
    enter_namespace()?;
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )
    .map_err(|err| format!("cannot make the mounts private: {err}"))?;
    for dir in binds(writable, protected) {
        rustix::mount::mount_bind_recursive(&dir, &dir)
            .map_err(|err| format!("cannot bind {}: {err}", dir.display()))?;
    }
    // The working directory still points into the mounts as they were
    // before the binds; enter it again through the new ones.
    if let Ok(cwd) = std::env::current_dir() {
        std::env::set_current_dir(&cwd)
            .map_err(|err| format!("cannot re-enter {}: {err}", cwd.display()))?;
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    for mount in mount_points()? {
        let read_only = under_any(&mount.path, protected) || !under_any(&mount.path, writable);
        if !read_only || mount.read_only() || seen.contains(&mount.path) {
            continue;
        }
        match mount.remount_read_only() {
            Ok(()) => seen.push(mount.path),
            // Gone since the table was read (an automount expired).
            Err(rustix::io::Errno::NOENT) => {}
            Err(err) => {
                return Err(format!(
                    "cannot make {} read-only: {err}",
                    mount.path.display()
                ));
            }
        }
    }
    Ok(())
}

/// `unshare(CLONE_NEWNS)` for a privileged process, else (or when that is
/// refused, as in a container without `CAP_SYS_ADMIN`) a new user
/// namespace mapping only the caller's own ids, plus a mount namespace.
fn enter_namespace() -> Result<(), String> {
    let uid = rustix::process::geteuid();
    let gid = rustix::process::getegid();
    if uid.is_root() && unshare(UnshareFlags::NEWNS).is_ok() {
        return Ok(());
    }
    unshare(UnshareFlags::NEWUSER | UnshareFlags::NEWNS).map_err(|err| {
        format!(
            "cannot create a private mount namespace ({err}); unprivileged user namespaces may be disabled on this system"
        )
    })?;
    let write = |file: &str, text: String| {
        std::fs::write(file, text).map_err(|err| format!("cannot write {file}: {err}"))
    };
    write("/proc/self/setgroups", "deny".to_owned())?;
    write("/proc/self/uid_map", format!("{0} {0} 1\n", uid.as_raw()))?;
    write("/proc/self/gid_map", format!("{0} {0} 1\n", gid.as_raw()))
}

/// `unshare(2)` without `CLONE_FILES` (the one flag that makes the call
/// unsafe, and the reason rustix deprecated its safe wrapper).
#[allow(deprecated)]
pub(crate) fn unshare(flags: UnshareFlags) -> rustix::io::Result<()> {
    debug_assert!(!flags.contains(UnshareFlags::FILES));
    rustix::thread::unshare(flags)
}

/// The directories bound onto themselves, in order: the writable roots,
/// and every ancestor of a writable root or protected directory that lies
/// strictly inside a writable root (shallowest first), then the protected
/// directories. A mount point cannot be renamed or removed (`EBUSY`), so
/// a command cannot move `DSH_HOME` or the workspace away by renaming a
/// parent inside `/tmp` and put a directory of its own in their place.
fn binds(writable: &[PathBuf], protected: &[PathBuf]) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = writable.to_vec();
    for dir in writable.iter().chain(protected) {
        for ancestor in dir.ancestors().skip(1) {
            let pinned = writable
                .iter()
                .any(|root| ancestor.starts_with(root) && ancestor != root);
            if pinned && !dirs.iter().any(|d| d == ancestor) {
                dirs.push(ancestor.to_path_buf());
            }
        }
    }
    dirs.sort_by_key(|dir| dir.components().count());
    dirs.extend(protected.iter().cloned());
    dirs
}

fn under_any(path: &Path, roots: &[PathBuf]) -> bool {
    roots.iter().any(|root| path.starts_with(root))
}

/// One line of `/proc/self/mountinfo`: where, and its per-mount options.
#[derive(Debug, PartialEq, Eq)]
struct MountPoint {
    path: PathBuf,
    options: String,
}

impl MountPoint {
    fn read_only(&self) -> bool {
        self.options.split(',').any(|option| option == "ro")
    }

    /// Remounts read-only, keeping the per-mount flags a user namespace
    /// may not clear (`nosuid`, `nodev`, `noexec`, the atime mode).
    fn remount_read_only(&self) -> rustix::io::Result<()> {
        let mut flags = MountFlags::BIND | MountFlags::RDONLY;
        for option in self.options.split(',') {
            flags |= match option {
                "nosuid" => MountFlags::NOSUID,
                "nodev" => MountFlags::NODEV,
                "noexec" => MountFlags::NOEXEC,
                "noatime" => MountFlags::NOATIME,
                "nodiratime" => MountFlags::NODIRATIME,
                "relatime" => MountFlags::RELATIME,
                "nosymfollow" => MountFlags::NOSYMFOLLOW,
                _ => MountFlags::empty(),
            };
        }
        rustix::mount::mount_remount(&self.path, flags, "")
    }
}

/// Every mount of this namespace, in the kernel's order (parents first).
fn mount_points() -> Result<Vec<MountPoint>, String> {
    let table = std::fs::read_to_string("/proc/self/mountinfo")
        .map_err(|err| format!("cannot read /proc/self/mountinfo: {err}"))?;
    table
        .lines()
        .map(|line| {
            parse_line(line)
                .ok_or_else(|| format!("unexpected line in /proc/self/mountinfo: {line}"))
        })
        .collect()
}

/// `36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw`:
/// the fifth field is the mount point, the sixth the per-mount options.
fn parse_line(line: &str) -> Option<MountPoint> {
    let mut fields = line.split(' ');
    let path = fields.nth(4)?;
    let options = fields.next()?;
    Some(MountPoint {
        path: PathBuf::from(unescape(path)),
        options: options.to_owned(),
    })
}

/// Undoes the kernel's octal escapes (`\040` for a space, `\134` for `\`).
fn unescape(field: &str) -> OsString {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes.get(i + 1..i + 4).and_then(|digits| {
            let text = std::str::from_utf8(digits).ok()?;
            u8::from_str_radix(text, 8).ok()
        });
        match (bytes[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    OsString::from_vec(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_lines_are_parsed_with_escapes() {
        let mount = parse_line(
            "36 35 98:0 /mnt1 /mnt/my\\040disk\\134x rw,nosuid,relatime shared:1 - ext3 /dev/root rw",
        );
        assert_eq!(
            mount,
            Some(MountPoint {
                path: PathBuf::from("/mnt/my disk\\x"),
                options: "rw,nosuid,relatime".to_owned(),
            })
        );
        assert!(!mount.is_some_and(|m| m.read_only()));
        let ro = parse_line("28 27 0:25 / /mnt/p ro,nosuid,nodev - tmpfs t ro");
        assert!(ro.is_some_and(|m| m.read_only()));
        assert_eq!(parse_line("garbage"), None);
        assert_eq!(unescape("a\\0"), OsString::from("a\\0"));
    }

    #[test]
    fn parents_inside_writable_roots_are_pinned() {
        let writable = [PathBuf::from("/tmp"), PathBuf::from("/tmp/a/ws")];
        let protected = [PathBuf::from("/tmp/b/home")];
        assert_eq!(
            binds(&writable, &protected),
            ["/tmp", "/tmp/a", "/tmp/b", "/tmp/a/ws", "/tmp/b/home"]
                .map(PathBuf::from)
                .to_vec()
        );
        assert_eq!(binds(&[], &protected), vec![PathBuf::from("/tmp/b/home")]);
    }

    #[test]
    fn read_only_unless_under_a_writable_root_and_not_protected() {
        let writable = [PathBuf::from("/tmp"), PathBuf::from("/home/u/ws")];
        assert!(under_any(Path::new("/tmp/x"), &writable));
        assert!(under_any(Path::new("/home/u/ws"), &writable));
        assert!(!under_any(Path::new("/home/u/wsx"), &writable));
        assert!(!under_any(Path::new("/"), &writable));
    }
}
