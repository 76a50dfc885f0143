//! `session.delta` notices for an observer that wants them:
//! [`DeltaTap`] (a model attempt's streamed fragments) and
//! [`OutputDeltas`] (a foreground `bash` call's output).

use dsh_llm::StreamChunk;
use dsh_protocol::methods::{DeltaKind, SessionDeltaParams};
use dsh_session::EventObserver;
use dsh_tools::OutputTap;
use std::sync::{Arc, Mutex, PoisonError};

/// Most bytes a [`DeltaTap`] holds before it hands them on.
const TAP_HOLD_MAX: usize = 1 << 20;

/// Turns one attempt's chunks into deltas. Fragments of one block that
/// arrive together (the provider's stream had more ready) are handed on
/// as one delta when the stream waits, when another block's fragment comes,
/// or past 1 MiB: no delay, and no cost per fragment.
pub(super) struct DeltaTap {
    observer: Arc<dyn EventObserver>,
    session_id: String,
    turn: u32,
    step: u32,
    attempt: u32,
    /// The block being held: kind, index, call id.
    held: Option<(DeltaKind, u32, Option<String>)>,
    text: String,
}

impl DeltaTap {
    /// The tap of attempt `attempt` (from 0) of step `step` of `turn`.
    pub(super) fn new(
        observer: Arc<dyn EventObserver>,
        session_id: &str,
        turn: u32,
        step: u32,
        attempt: u32,
    ) -> Self {
        Self {
            observer,
            session_id: session_id.to_owned(),
            turn,
            step,
            attempt,
            held: None,
            text: String::new(),
        }
    }

    /// Takes the fragment `chunk` carries, if any.
    pub(super) fn chunk(&mut self, chunk: &StreamChunk) {
        let (kind, index, call_id, text) = match chunk {
            StreamChunk::TextDelta { index, text } => (DeltaKind::Text, *index, None, text),
            StreamChunk::ReasoningDelta { index, text } => {
                (DeltaKind::Reasoning, *index, None, text)
            }
            StreamChunk::ToolCallDelta {
                index,
                id,
                arguments_delta,
                ..
            } => (
                DeltaKind::ToolArguments,
                *index,
                Some(id.as_str()),
                arguments_delta,
            ),
            _ => return,
        };
        if text.is_empty() {
            return;
        }
        let same = self
            .held
            .as_ref()
            .is_some_and(|(k, i, c)| *k == kind && *i == index && c.as_deref() == call_id);
        if !same {
            self.flush();
            self.held = Some((kind, index, call_id.map(str::to_owned)));
        }
        self.text.push_str(text);
        if self.text.len() >= TAP_HOLD_MAX {
            self.flush();
        }
    }

    /// Hands on what is held (the stream waits, or ended).
    pub(super) fn flush(&mut self) {
        if self.text.is_empty() {
            return;
        }
        let Some((kind, index, call_id)) = self.held.clone() else {
            return;
        };
        self.observer.on_delta(SessionDeltaParams {
            session_id: self.session_id.clone(),
            turn: self.turn,
            step: self.step,
            attempt: (self.attempt > 0).then_some(self.attempt),
            kind,
            index,
            call_id,
            delta: std::mem::take(&mut self.text),
        });
    }
}

/// Most bytes of one call's output sent as deltas per descriptor; past
/// it the output is only in the call's result (which keeps its end).
const OUTPUT_DELTA_MAX: usize = 4 << 20;

/// A foreground `bash` call's output as `tool-output` deltas.
pub(super) struct OutputDeltas {
    observer: Arc<dyn EventObserver>,
    session_id: String,
    turn: u32,
    step: u32,
    call_id: String,
    /// Per descriptor (1, 2): the bytes of a character cut between two
    /// reads, and how many bytes were sent.
    state: Mutex<[(Vec<u8>, usize); 2]>,
}

impl OutputDeltas {
    /// The tap of call `call_id` of step `step` of `turn`.
    pub(super) fn new(
        observer: Arc<dyn EventObserver>,
        session_id: &str,
        turn: u32,
        step: u32,
        call_id: &str,
    ) -> Self {
        Self {
            observer,
            session_id: session_id.to_owned(),
            turn,
            step,
            call_id: call_id.to_owned(),
            state: Mutex::new(Default::default()),
        }
    }
}

impl OutputTap for OutputDeltas {
    fn output(&self, fd: u32, data: &[u8]) {
        let Some(slot) = fd.checked_sub(1).and_then(|i| usize::try_from(i).ok()) else {
            return;
        };
        let text = {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            let Some((carry, sent)) = state.get_mut(slot) else {
                return;
            };
            if *sent >= OUTPUT_DELTA_MAX {
                return;
            }
            carry.extend_from_slice(data);
            let whole = whole_chars(carry);
            let text = String::from_utf8_lossy(&carry[..whole]).into_owned();
            carry.drain(..whole);
            *sent += whole;
            text
        };
        if text.is_empty() {
            return;
        }
        self.observer.on_delta(SessionDeltaParams {
            session_id: self.session_id.clone(),
            turn: self.turn,
            step: self.step,
            attempt: None,
            kind: DeltaKind::ToolOutput,
            index: fd,
            call_id: Some(self.call_id.clone()),
            delta: text,
        });
    }
}

/// How many bytes of `bytes` end on a character boundary: all of them but
/// a UTF-8 sequence cut short at the end (which the next read completes).
fn whole_chars(bytes: &[u8]) -> usize {
    let len = bytes.len();
    for back in 1..=len.min(4) {
        let byte = bytes[len - back];
        if byte & 0xC0 == 0x80 {
            continue;
        }
        let needed = match byte {
            0xC0..=0xDF => 2,
            0xE0..=0xEF => 3,
            0xF0..=0xF7 => 4,
            _ => 1,
        };
        return if needed > back { len - back } else { len };
    }
    len
}

#[cfg(test)]
mod tests {
    use super::whole_chars;

    #[test]
    fn a_character_cut_at_the_end_waits_for_its_rest() {
        let euro = "€".as_bytes();
        assert_eq!(whole_chars(b"abc"), 3);
        assert_eq!(whole_chars(&[b'a', euro[0]]), 1);
        assert_eq!(whole_chars(&[b'a', euro[0], euro[1]]), 1);
        assert_eq!(whole_chars(&[b'a', euro[0], euro[1], euro[2]]), 4);
        // Invalid bytes are not held: lossy decoding replaces them.
        assert_eq!(whole_chars(&[b'a', 0x80, 0x80, 0x80, 0x80]), 5);
        assert_eq!(whole_chars(&[]), 0);
    }
}
