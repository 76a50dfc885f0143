//! Which script of a scenario answers a request: the first `agents` entry
//! whose `when` occurs in one of the request's user prompts, else the
//! top-level `replies`.

use super::scenario::{Reply, Scenario};
use std::fmt;

/// Names a script of a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScriptKey {
    /// The top-level `replies` (the root session's).
    Root,
    /// `agents[i]`.
    Agent(usize),
}

/// The script chosen for one request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Script<'a> {
    /// Which script.
    pub key: ScriptKey,
    /// The agent script's `when`; `None` for the top-level script.
    pub when: Option<&'a str>,
    /// Its replies, in order.
    pub replies: &'a [Reply],
    /// For an agent script, the position (among the prompts given to
    /// [`Scenario::script_for`]) of the first prompt containing `when`.
    pub first_match: Option<usize>,
}

impl fmt::Display for Script<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.when {
            Some(when) => write!(f, "agent script {when:?}"),
            None => f.write_str("top-level script"),
        }
    }
}

impl Scenario {
    /// The script for a request whose user prompts are `prompts`, in
    /// history order: the first `agents` entry whose `when` occurs in one of
    /// them, else the top-level replies.
    pub fn script_for<S: AsRef<str>>(&self, prompts: &[S]) -> Script<'_> {
        self.agents
            .iter()
            .enumerate()
            .find_map(|(i, agent)| {
                let first = prompts
                    .iter()
                    .position(|p| p.as_ref().contains(agent.when.as_str()))?;
                Some(Script {
                    key: ScriptKey::Agent(i),
                    when: Some(&agent.when),
                    replies: &agent.replies,
                    first_match: Some(first),
                })
            })
            .unwrap_or(Script {
                key: ScriptKey::Root,
                when: None,
                replies: &self.replies,
                first_match: None,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{AgentScript, Text};
    use super::*;

    fn reply(text: &str) -> Reply {
        Reply {
            text: Some(Text::Whole(text.into())),
            ..Reply::default()
        }
    }

    fn scenario() -> Scenario {
        Scenario {
            replies: vec![reply("root")],
            agents: vec![
                AgentScript {
                    when: "TASK-B".into(),
                    replies: vec![reply("b")],
                },
                AgentScript {
                    when: "TASK-A".into(),
                    replies: vec![reply("a1"), reply("a2")],
                },
            ],
            search: Vec::new(),
        }
    }

    #[test]
    fn the_first_agents_entry_matching_any_prompt_wins() {
        let s = scenario();
        let root = s.script_for(&["hello", "no task here"]);
        assert_eq!((root.key, root.first_match), (ScriptKey::Root, None));
        assert_eq!(root.replies, [reply("root")]);
        assert_eq!(root.to_string(), "top-level script");
        let a = s.script_for(&["root prompt", "please TASK-A now", "TASK-A again"]);
        assert_eq!((a.key, a.first_match), (ScriptKey::Agent(1), Some(1)));
        assert_eq!(a.replies.len(), 2);
        assert_eq!(a.to_string(), "agent script \"TASK-A\"");
        // Both match: entry order decides, not prompt order.
        let b = s.script_for(&["TASK-A first", "then TASK-B"]);
        assert_eq!((b.key, b.first_match), (ScriptKey::Agent(0), Some(1)));
        let none: [&str; 0] = [];
        assert_eq!(s.script_for(&none).key, ScriptKey::Root);
    }
}
