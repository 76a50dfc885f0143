//! The model-facing words of compaction (this project's own).

/// Opens a checkpoint; the summary and [`CHECKPOINT_CLOSE`] follow as
/// blocks of their own.
pub const CHECKPOINT_OPEN: &str = "The conversation so far was longer than the context window allows, so its earlier part was condensed into the summary below. Take the summary as settled background: do not repeat it or remark on it, and carry on with the work from the messages after it.\n\n<compacted-summary>";

/// Closes a checkpoint.
pub const CHECKPOINT_CLOSE: &str = "</compacted-summary>";

/// What the summary call is asked to do, after the span to condense.
pub const INSTRUCTION: &str = "Stop the task for a moment: your only job in this reply is to write a checkpoint of the conversation above, which will replace it. Another instance of you will continue the work from this checkpoint alone, so leave out nothing it needs and nothing it does not.\n\nWrite plain text under these headings:\n1. Goal: what the user wants overall, with their constraints and preferences in their own terms.\n2. Requests: every instruction the user gave, in order, and whether it is done.\n3. Facts established: decisions taken and why, what was learnt about the code, data or environment.\n4. Files and commands: paths read, created or changed (what changed), commands run and what they showed; exact names, values and error messages where they matter.\n5. Problems: errors met, how they were solved, and what is still failing.\n6. Current state: what was being done at the end of the conversation above.\n7. Next steps: what remains, in order.\n\nDo not call any tool. Do not continue the task. If the conversation above begins with an earlier <compacted-summary>, fold what is still true into this checkpoint and drop what is no longer true; do not copy it unchanged.";

/// Stands in for the middle of a long tool result in a summary call.
pub fn pruned(omitted: usize) -> String {
    format!("\n\n[... {omitted} characters of this tool result left out here ...]\n\n")
}
