//! The model-facing texts of project instructions and skills. The layout
//! (tags, labelled sections, blank lines) follows the official runtime; the
//! words are this project's own.

/// Opens every instructions and catalog message.
pub(crate) const OPEN: &str = "<system-reminder>\n";

/// Closes every instructions and catalog message.
pub(crate) const CLOSE: &str = "\n</system-reminder>";

/// The first paragraph of an instructions baseline.
pub(crate) const INSTRUCTIONS_INTRO: &str = "Project instructions found in the workspace follow. Apply them where they bear on the task; a file deeper in the tree refines the ones above it. System, developer and direct user instructions take priority over them.";

/// Put before [`INSTRUCTIONS_INTRO`] when a baseline replaces an earlier
/// one (the working directory moved to another project).
pub(crate) const INSTRUCTIONS_REPLACE: &str =
    "This full set of project instructions replaces every set sent before.";

/// The label of a file in a baseline.
pub(crate) const FILE_LABEL: &str = "Instructions file";

/// The label of a file that changed since it was sent.
pub(crate) const CHANGED_LABEL: &str = "Changed instructions file";

/// What a changed file's section says before its new content.
pub(crate) const CHANGED: &str =
    "Its content changed; the text below supersedes what was loaded from it earlier.";

/// The label of a file found after the baseline.
pub(crate) const ADDED_LABEL: &str = "New instructions file";

/// What a file found after the baseline says before its content.
pub(crate) fn added(dir: &str) -> String {
    format!(
        "It covers work under `{dir}`. Apply it where it bears on the task; deeper files refine broader ones, and system, developer and direct user instructions take priority."
    )
}

/// The label of a file that is gone.
pub(crate) const REMOVED_LABEL: &str = "Deleted instructions file";

/// What a deleted file's section says.
pub(crate) const REMOVED: &str =
    "It was removed; what was loaded from it earlier no longer applies.";

/// The first line of a message that had to leave files out or shorten one:
/// `omitted` and `truncated` (path, original bytes, bytes kept) name them.
pub(crate) fn budget_note(
    limit: usize,
    omitted: &[&str],
    truncated: Option<(&str, u64, usize)>,
) -> String {
    let mut parts = Vec::new();
    if !omitted.is_empty() {
        parts.push(format!("left out {}", omitted.join(", ")));
    }
    if let Some((path, from, to)) = truncated {
        parts.push(format!("shortened {path} from {from} to {to} bytes"));
    }
    format!(
        "Project instructions are limited to {limit} bytes: {}",
        parts.join("; ")
    )
}

/// The first paragraph of the first skill catalog.
pub(crate) const CATALOG_INTRO: &str = "Skills are packaged instructions for particular kinds of task. This session offers these skills:";

/// What follows the first catalog's list.
pub(crate) const CATALOG_GUIDANCE: &str = "When the user asks for a skill by name, or the task plainly fits a skill's description, load it with the `skill` tool (exact name) before acting, load every skill that applies, and follow what it says. The list holds summaries only: do not guess a skill's instructions before loading it.\nIf a <skill_content> block for a skill is already in this conversation (the user invoked it), follow it and do not load that skill again.";

/// The first paragraph of a catalog that replaces an earlier one.
pub(crate) const CATALOG_UPDATE_INTRO: &str =
    "The skill catalog changed. This full list replaces every earlier list of this session:";

/// What follows a replacing catalog's list.
pub(crate) const CATALOG_UPDATE_GUIDANCE: &str = "Only the names in this list can be loaded. Load a listed skill with the `skill` tool (exact name) before acting when the user asks for it or the task plainly fits its description.\nIf a <skill_content> block for a skill is already in this conversation (the user invoked it), follow it and do not load that skill again.";

/// What follows a replacing catalog that lists nothing.
pub(crate) const CATALOG_EMPTY_GUIDANCE: &str = "No skill can be loaded with the `skill` tool now; names from earlier lists are gone.\nA <skill_content> block the user adds to the conversation still applies: follow it.";

/// The `skill` tool's description.
pub(crate) const SKILL_TOOL: &str = "Load one of the skills listed in the skill catalog: returns its full instructions and the directory its files are in. Call it with the exact name from the catalog before working on a task the skill covers.";

/// The `name` parameter's description.
pub(crate) const SKILL_NAME: &str = "The skill's name, exactly as the catalog lists it.";

/// The lines of a loaded skill's `<skill_resources>` block.
pub(crate) fn skill_resources(dir: &str) -> String {
    format!(
        "Skill directory: {dir}\nPaths the skill mentions are relative to this directory; read the files it refers to only when you need them."
    )
}

/// What the refusal of an unknown skill adds: the names that can be
/// loaded.
pub(crate) fn known_skills(names: &[&str]) -> String {
    if names.is_empty() {
        " (no skills are available)".to_owned()
    } else {
        format!(" (available: {})", names.join(", "))
    }
}
