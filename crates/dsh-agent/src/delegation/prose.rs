//! What delegation tells the models of parents and children (our own
//! words, shaped as the official runtime's).

use crate::prose::Section;

/// The note appended to a child's task.
pub fn parent_instructions(parent: &str) -> String {
    format!(
        "You are a subagent started by the agent of session {parent}. Work on the task above on your own; your final answer is passed to that agent when you finish. To ask it something or report progress before then, call send_message with agent_id \"{parent}\"."
    )
}

/// The summary (first block) of a settled child's notice.
pub fn subagent_settled_summary(
    child: &str,
    stop: dsh_protocol::notifications::SubagentStopReason,
) -> String {
    use dsh_protocol::notifications::SubagentStopReason as Stop;
    let how = match stop {
        Stop::Completed => "has finished its task",
        Stop::MaxTokens => "stopped at its output token limit before finishing",
        Stop::Error => "stopped on an error before finishing",
        Stop::Aborted => "was stopped before finishing",
        Stop::Refusal => "declined the task",
    };
    format!("Subagent {child} {how}; it does nothing more unless you send it a message.")
}

/// The second block of a settled child's notice when a final message (the
/// third block) follows.
pub fn subagent_settled_label(label: &str) -> String {
    format!("Task \"{label}\"; the subagent's last message follows.")
}

/// The second (and last) block of a settled child's notice when it said
/// nothing.
pub fn subagent_no_final_message(label: &str) -> String {
    format!("Task \"{label}\"; the subagent left no final message.")
}

/// The first block of a message relayed from another agent.
pub fn agent_message_heading(sender: &str) -> String {
    format!("Message from agent {sender}:")
}

/// The runtime-context sections of a child at `depth` (of `max_depth`),
/// started by `parent`.
pub fn delegation_sections(depth: u64, max_depth: u64, parent: &str) -> [Section; 3] {
    let left = max_depth.saturating_sub(depth);
    let tool = |name: &'static str, tool: &str| Section {
        name,
        text: if left == 0 {
            format!("{tool}: not available at this depth (remaining delegation depth 0)")
        } else {
            format!("{tool}: remaining delegation depth {left}")
        },
    };
    [
        tool("tool:subagent:depth", "subagent"),
        tool("tool:subagent_fork:depth", "subagent_fork"),
        Section {
            name: "subagent:delegation",
            text: format!(
                "You are a subagent of session {parent} (delegation depth {depth}). Your final answer is delivered to it; send_message reaches it earlier."
            ),
        },
    ]
}
