//! Finding the skills: `<root>/.dsh/skills/*/SKILL.md`,
//! `<root>/.agents/skills/*/SKILL.md` (root: the project root of the
//! working directory) and `$DSH_HOME/skills/*/SKILL.md`.

use super::front_matter;
use crate::project::fingerprint::Fingerprint;
use crate::project::root;
use dsh_tools::{ReadRegularError, read_regular};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The file that makes a directory a skill.
const SKILL_FILE: &str = "SKILL.md";

/// Largest `SKILL.md` read.
pub(crate) const MAX_SKILL_BYTES: u64 = 1024 * 1024;

/// Most skills in a catalog (the first ones by source, then by directory
/// name, are kept).
pub(crate) const MAX_SKILLS: usize = 256;

/// Most entries of one skills directory looked at.
const MAX_ENTRIES: usize = 1024;

/// A skill that can be loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skill {
    /// Its name (from the front matter).
    pub name: String,
    /// Its one-line description.
    pub description: String,
    /// Its directory, the base of the relative paths it mentions.
    pub dir: PathBuf,
    /// Its `SKILL.md`.
    pub file: PathBuf,
}

/// The skills directories for a working directory `cwd`, in precedence
/// order (a name found in an earlier one hides the same name later).
pub(crate) fn roots(cwd: &Path, home: Option<&Path>) -> Vec<PathBuf> {
    let project = root::locate(cwd);
    let root = project.root();
    let mut roots = vec![root.join(".dsh/skills"), root.join(".agents/skills")];
    roots.extend(home.map(Path::to_path_buf));
    roots
}

/// What a `SKILL.md` held when last read: its name and description, or
/// `None` if it was refused.
type Parsed = Option<(String, String)>;

/// The front matter of the `SKILL.md` files read before, by fingerprint
/// (an unchanged file is not read again, and a malformed one is reported
/// once).
#[derive(Default)]
pub(crate) struct Cache {
    parsed: HashMap<PathBuf, (Fingerprint, Parsed)>,
    reported_full: bool,
    quiet: bool,
}

impl Cache {
    /// A cache for one look-up that reports nothing (the catalog's scans
    /// already told stderr what they skipped).
    pub(crate) fn quiet() -> Self {
        Self {
            quiet: true,
            ..Self::default()
        }
    }

    /// The skills under `roots`, by name.
    pub(crate) fn scan(&mut self, roots: &[PathBuf]) -> Vec<Skill> {
        let mut skills: Vec<Skill> = Vec::new();
        let mut names = HashSet::new();
        let mut seen = HashSet::new();
        let mut full = false;
        'roots: for root in roots {
            for dir in skill_dirs(root) {
                let file = dir.join(SKILL_FILE);
                let Some((name, description)) = self.parse(&file) else {
                    continue;
                };
                seen.insert(file.clone());
                if !names.insert(name.clone()) {
                    tracing::debug!("skill {name} in {} hidden by an earlier one", dir.display());
                    continue;
                }
                if skills.len() == MAX_SKILLS {
                    full = true;
                    break 'roots;
                }
                skills.push(Skill {
                    name,
                    description,
                    dir,
                    file,
                });
            }
        }
        if full && !self.quiet && !std::mem::replace(&mut self.reported_full, true) {
            tracing::warn!(
                "more than {MAX_SKILLS} skills: the catalog lists the first {MAX_SKILLS}"
            );
        }
        self.parsed.retain(|file, _| seen.contains(file));
        skills.sort_by(|a, b| a.name.cmp(&b.name));
        skills
    }

    /// The name and description in `file`, if it is a valid skill.
    fn parse(&mut self, file: &Path) -> Parsed {
        let (fingerprint, _) = Fingerprint::at(file).ok()?;
        if let Some((known, parsed)) = self.parsed.get(file)
            && *known == fingerprint
        {
            return parsed.clone();
        }
        let parsed = match load(file) {
            Ok(Some(bytes)) => match front_matter::parse(&String::from_utf8_lossy(&bytes)) {
                Ok(skill) => Some((skill.name, skill.description)),
                Err(err) => {
                    self.report(file, &err);
                    None
                }
            },
            Ok(None) => None,
            Err(err) => {
                self.report(file, &err);
                None
            }
        };
        self.parsed
            .insert(file.to_owned(), (fingerprint, parsed.clone()));
        parsed
    }
}

impl Cache {
    fn report(&self, file: &Path, why: &dyn std::fmt::Display) {
        if !self.quiet {
            tracing::warn!("skill file {} skipped: {why}", file.display());
        }
    }
}

/// The bytes of a `SKILL.md`; `Ok(None)` when nothing is there.
pub(crate) fn load(file: &Path) -> Result<Option<Vec<u8>>, ReadRegularError> {
    match read_regular(file, MAX_SKILL_BYTES) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(ReadRegularError::Io(err)) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err),
    }
}

/// The body of the skill in `file` now, if it is still a valid skill named
/// `name`.
pub(crate) fn body(file: &Path, name: &str) -> Option<String> {
    let bytes = load(file).ok()??;
    let text = String::from_utf8_lossy(&bytes);
    front_matter::parse(&text)
        .ok()
        .filter(|skill| skill.name == name)
        .map(|skill| skill.body.to_owned())
}

/// The subdirectories of `root` (links followed), by name; at most
/// [`MAX_ENTRIES`] entries are looked at.
fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(root) {
        Ok(entries) => entries,
        Err(err) => {
            if err.kind() != std::io::ErrorKind::NotFound {
                tracing::debug!("skills directory {} not read: {err}", root.display());
            }
            return Vec::new();
        }
    };
    let mut dirs: Vec<PathBuf> = entries
        .take(MAX_ENTRIES)
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|path| path.is_dir())
        .collect();
    dirs.sort();
    dirs
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(dir: &Path, name: &str, description: &str) {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(
            dir.join(SKILL_FILE),
            format!("---\nname: {name}\ndescription: {description}\n---\nbody of {name}\n"),
        )
        .unwrap();
    }

    #[test]
    fn skills_come_from_three_places_by_name_and_the_first_source_wins() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        let home = dir.path().join("home/skills");
        std::fs::create_dir_all(ws.join(".git")).unwrap();
        skill(&ws.join(".dsh/skills/zeta"), "zeta", "Z.");
        skill(&ws.join(".dsh/skills/dup"), "dup", "from dsh");
        skill(&ws.join(".agents/skills/adir"), "alpha", "A.");
        skill(&ws.join(".agents/skills/dup"), "dup", "from agents");
        skill(&home.join("dup"), "dup", "from home");
        skill(&home.join("beta"), "beta", "B.");
        skill(&ws.join(".dsh/skills/bad"), "Bad Name", "x");
        std::fs::create_dir_all(ws.join(".dsh/skills/empty")).unwrap();
        std::fs::write(ws.join(".dsh/skills/top.md"), "not a skill").unwrap();
        let sub = ws.join("sub");
        std::fs::create_dir_all(&sub).unwrap();
        skill(&sub.join(".dsh/skills/below"), "below", "not at the root");
        let skills = Cache::default().scan(&roots(&sub, Some(&home)));
        let listed: Vec<(&str, &str)> = skills
            .iter()
            .map(|s| (s.name.as_str(), s.description.as_str()))
            .collect();
        assert_eq!(
            listed,
            [
                ("alpha", "A."),
                ("beta", "B."),
                ("dup", "from dsh"),
                ("zeta", "Z.")
            ]
        );
        assert_eq!(skills[0].dir, ws.join(".agents/skills/adir"));
        assert_eq!(
            body(&skills[0].file, "alpha").as_deref(),
            Some("body of alpha")
        );
        assert_eq!(body(&skills[0].file, "other"), None);
    }

    #[test]
    fn the_catalog_is_bounded() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..MAX_SKILLS + 3 {
            skill(
                &dir.path().join(format!("s{i:04}")),
                &format!("s{i:04}"),
                "d",
            );
        }
        let mut cache = Cache::default();
        let skills = cache.scan(&[dir.path().to_path_buf()]);
        assert_eq!(skills.len(), MAX_SKILLS);
        assert_eq!(
            skills[MAX_SKILLS - 1].name,
            format!("s{:04}", MAX_SKILLS - 1)
        );
        // Cached: a second scan gives the same without reading.
        assert_eq!(cache.scan(&[dir.path().to_path_buf()]), skills);
    }

    #[test]
    fn an_oversized_skill_file_is_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big");
        std::fs::create_dir_all(&big).unwrap();
        let mut text = "---\nname: big\ndescription: d\n---\n".to_owned();
        text.push_str(&"x".repeat(usize::try_from(MAX_SKILL_BYTES).unwrap()));
        std::fs::write(big.join(SKILL_FILE), text).unwrap();
        assert!(
            Cache::default()
                .scan(&[dir.path().to_path_buf()])
                .is_empty()
        );
    }
}
