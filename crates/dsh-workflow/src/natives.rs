//! The host side of the hooks: the state shared by the native functions the
//! prelude receives (agent calls, log output) and the engine loop.

use std::cell::RefCell;
use std::collections::BTreeSet;

use rquickjs::{Ctx, Exception};
use tokio::sync::mpsc::UnboundedSender;

use crate::{AgentCall, Event, Limits};

/// What the natives and the engine loop share (on the engine thread only).
#[derive(Debug)]
pub(crate) struct Host {
    /// Events to the host.
    events: UnboundedSender<Event>,
    /// The agent-call limit.
    max_agents: usize,
    /// The mutable part.
    state: RefCell<State>,
}

/// The mutable part of [`Host`].
#[derive(Debug, Default)]
struct State {
    /// How many `agent()` calls were made.
    calls: u64,
    /// The ids of the calls not yet settled by the host.
    outstanding: BTreeSet<u64>,
    /// Bytes of log output sent.
    log_bytes: usize,
    /// Whether the log limit was reached (and the marker line sent).
    log_full: bool,
    /// The total log limit.
    max_log_bytes: usize,
}

impl Host {
    /// The host state for a run with `limits`, reporting to `events`.
    pub(crate) fn new(events: UnboundedSender<Event>, limits: &Limits) -> Self {
        Self {
            events,
            max_agents: limits.max_agents,
            state: RefCell::new(State {
                max_log_bytes: limits.max_log_bytes,
                ..State::default()
            }),
        }
    }

    /// Sends `event` to the host (which may have gone: then nobody listens).
    pub(crate) fn send(&self, event: Event) {
        let _ = self.events.send(event);
    }

    /// Whether some `agent()` call still waits for the host.
    pub(crate) fn has_outstanding(&self) -> bool {
        !self.state.borrow().outstanding.is_empty()
    }

    /// Marks call `id` settled; false if it was not outstanding.
    pub(crate) fn take_outstanding(&self, id: u64) -> bool {
        self.state.borrow_mut().outstanding.remove(&id)
    }

    /// The native behind `agent()`: records the call, sends it to the host
    /// and returns its id, or 0 when the run has made all the calls it may.
    /// The prelude has checked the arguments; they are checked again here
    /// because the host must never see a malformed call.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn agent<'js>(
        &self,
        ctx: &Ctx<'js>,
        prompt: String,
        label: Option<String>,
        phase: Option<String>,
        schema: Option<String>,
        provider: Option<String>,
        model: Option<String>,
    ) -> rquickjs::Result<u64> {
        if prompt.trim().is_empty() {
            return Err(Exception::throw_type(
                ctx,
                "agent() requires a non-empty prompt string",
            ));
        }
        let schema = match schema {
            None => None,
            Some(text) => match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(schema @ serde_json::Value::Object(_)) => Some(schema),
                _ => {
                    return Err(Exception::throw_type(
                        ctx,
                        "agent() option \"schema\" must be a JSON schema object",
                    ));
                }
            },
        };
        let id = {
            let mut state = self.state.borrow_mut();
            if usize::try_from(state.calls).map_or(true, |calls| calls >= self.max_agents) {
                return Ok(0);
            }
            state.calls += 1;
            let id = state.calls;
            state.outstanding.insert(id);
            id
        };
        self.send(Event::Agent(AgentCall {
            id,
            prompt,
            label,
            phase,
            schema,
            provider,
            model,
        }));
        Ok(id)
    }

    /// The native behind `log()`: sends one line, cut to
    /// [`Limits::MAX_LOG_LINE_BYTES`], while the run's log total allows.
    pub(crate) fn log(&self, line: String) {
        let line = cut_line(line);
        let mut state = self.state.borrow_mut();
        if state.log_full {
            return;
        }
        if state.log_bytes.saturating_add(line.len()) > state.max_log_bytes {
            state.log_full = true;
            let marker = format!(
                "[workflow log limit of {} bytes reached; later log lines of this run are dropped]",
                state.max_log_bytes
            );
            drop(state);
            self.send(Event::Log(marker));
            return;
        }
        state.log_bytes += line.len();
        drop(state);
        self.send(Event::Log(line));
    }
}

/// `line` cut to [`Limits::MAX_LOG_LINE_BYTES`] (on a character boundary)
/// with a note saying so.
fn cut_line(mut line: String) -> String {
    let max = Limits::MAX_LOG_LINE_BYTES;
    if line.len() <= max {
        return line;
    }
    let note = format!(" \u{2026} [line cut at {max} bytes]");
    let mut end = max.saturating_sub(note.len());
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line.truncate(end);
    line.push_str(&note);
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_lines_are_cut_on_char_boundaries() {
        let line = "é".repeat(5000);
        let cut = cut_line(line);
        assert!(cut.len() <= Limits::MAX_LOG_LINE_BYTES, "{}", cut.len());
        assert!(cut.ends_with("[line cut at 4096 bytes]"));
        assert_eq!(cut_line("short".to_owned()), "short");
    }
}
