//! Directory names under `DSH_HOME/sessions` (§11.2): the project key of a
//! working directory and the encoded session id segment.

use std::fmt::Write as _;
use std::path::Path;

/// Directory (under `sessions/`) of sessions created without a working
/// directory.
pub const NO_CWD_DIR: &str = "_no-cwd";

/// Longest project key kept inside the `--…--` wrapper (255 - 4).
const MAX_KEY_LEN: usize = 251;

/// Whether `c` is kept as is in project keys and session id segments.
fn is_safe(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')
}

/// Appends `c` as one `~XXXX` escape per UTF-16 unit.
fn escape(out: &mut String, c: char) {
    let mut units = [0u16; 2];
    for unit in c.encode_utf16(&mut units) {
        // Writing to a String cannot fail.
        let _ = write!(out, "~{unit:04X}");
    }
}

/// The project directory name of a working directory: `--<key>--`, or
/// [`NO_CWD_DIR`] without one.
///
/// Each run of `/`, `\` or `:` becomes one `-`; `[A-Za-z0-9._-]` are kept;
/// every other UTF-16 unit becomes `~XXXX` (upper-case hex); leading `-` are
/// stripped; an empty key becomes `root`; the key is cut to 251 characters.
/// A path that is not valid UTF-8 is read lossily (each bad sequence becomes
/// U+FFFD, `~FFFD`).
///
/// ```
/// use dsh_session::store::project_key;
/// use std::path::Path;
/// assert_eq!(project_key(Some(Path::new("/home/user/ws"))), "--home-user-ws--");
/// assert_eq!(project_key(Some(Path::new("/"))), "--root--");
/// assert_eq!(project_key(None), "_no-cwd");
/// ```
pub fn project_key(cwd: Option<&Path>) -> String {
    let Some(cwd) = cwd else {
        return NO_CWD_DIR.to_owned();
    };
    let text = cwd.to_string_lossy();
    let mut key = String::with_capacity(text.len());
    let mut in_separator_run = false;
    for c in text.chars() {
        if matches!(c, '/' | '\\' | ':') {
            if !in_separator_run {
                key.push('-');
            }
            in_separator_run = true;
            continue;
        }
        in_separator_run = false;
        if is_safe(c) {
            key.push(c);
        } else {
            escape(&mut key, c);
        }
    }
    let key = key.trim_start_matches('-');
    let key = if key.is_empty() { "root" } else { key };
    // The key is ASCII by construction, so any byte index is a char boundary.
    let key = key.get(..MAX_KEY_LEN).unwrap_or(key);
    format!("--{key}--")
}

/// The directory name of a session id: `[A-Za-z0-9._-]` kept, every other
/// UTF-16 unit as `~XXXX`; the ids `.` and `..` become `~002E` and
/// `~002E~002E` so they never name the current or parent directory.
///
/// ```
/// use dsh_session::store::encode_session_id;
/// assert_eq!(encode_session_id("session-1"), "session-1");
/// assert_eq!(encode_session_id("a/b~c"), "a~002Fb~007Ec");
/// assert_eq!(encode_session_id(".."), "~002E~002E");
/// ```
pub fn encode_session_id(id: &str) -> String {
    match id {
        "." => return "~002E".to_owned(),
        ".." => return "~002E~002E".to_owned(),
        _ => {}
    }
    let mut out = String::with_capacity(id.len());
    for c in id.chars() {
        if is_safe(c) {
            out.push(c);
        } else {
            escape(&mut out, c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(path: &str) -> String {
        project_key(Some(Path::new(path)))
    }

    #[test]
    fn separators_collapse_and_leading_dashes_go() {
        assert_eq!(key("/home/user/ws"), "--home-user-ws--");
        assert_eq!(key("//a\\\\b::c"), "--a-b-c--");
        assert_eq!(key("C:\\Users\\me"), "--C-Users-me--");
        assert_eq!(key("/a/:\\/b"), "--a-b--");
        assert_eq!(key("/-x"), "--x--");
        assert_eq!(key("/home/ws/"), "--home-ws---");
        assert_eq!(key("/work/error_500"), "--work-error_500--");
    }

    #[test]
    fn empty_and_root_become_root() {
        assert_eq!(key("/"), "--root--");
        assert_eq!(key(""), "--root--");
        assert_eq!(key("---"), "--root--");
    }

    #[test]
    fn other_characters_are_utf16_escaped() {
        assert_eq!(key("/a b"), "--a~0020b--");
        assert_eq!(key("/~"), "--~007E--");
        assert_eq!(key("/é"), "--~00E9--");
        // Outside the BMP: two surrogate units.
        assert_eq!(key("/😀"), "--~D83D~DE00--");
    }

    #[test]
    fn long_keys_are_cut_to_251() {
        let long = format!("/{}", "a".repeat(400));
        let got = key(&long);
        assert_eq!(got.len(), 251 + 4);
        assert!(got.starts_with("--aaa") && got.ends_with("a--"));
        // An escape may be cut in the middle, as upstream truncates the
        // encoded string.
        let long = format!("/{}~", "a".repeat(249));
        assert_eq!(key(&long), format!("--{}~0--", "a".repeat(249)));
    }

    #[test]
    fn no_cwd() {
        assert_eq!(project_key(None), "_no-cwd");
    }

    #[test]
    fn session_ids() {
        assert_eq!(
            encode_session_id("77f213c4-6d86-481e-8f30-13237ea2021b"),
            "77f213c4-6d86-481e-8f30-13237ea2021b"
        );
        assert_eq!(encode_session_id("."), "~002E");
        assert_eq!(encode_session_id(".."), "~002E~002E");
        assert_eq!(encode_session_id("..."), "...");
        assert_eq!(encode_session_id("a.b_c"), "a.b_c");
        assert_eq!(encode_session_id("a/../b"), "a~002F..~002Fb");
        assert_eq!(encode_session_id("x:y"), "x~003Ay");
        assert_eq!(encode_session_id("日"), "~65E5");
    }
}
