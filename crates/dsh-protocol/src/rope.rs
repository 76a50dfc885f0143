//! Serialised JSON that holds a repeated long string once: [`JsonRope`].
//!
//! The official event format repeats a reply's text: an `assistant/message`
//! carries it in `message.content`, again as the stream's deltas and a
//! third time in the `block-end` record. Serialised into one buffer, a
//! 100 MB tool call makes a 300 MB event. [`to_rope`] serialises into a
//! list of shared byte segments instead: the escaped text of every long
//! string (at least [`SHARE_MIN`] bytes) becomes a segment of its own, and a
//! later long string whose escaped text equals a run of an earlier one —
//! the same block again, or the deltas that spell it — is a slice of that
//! segment, not a copy. The bytes written are exactly those of
//! `serde_json::to_vec` followed by [`surrogates::decode`](crate::surrogates::decode).
//!
//! A run is found without searching: a string is compared, as serde_json
//! writes its pieces, with the text that follows the last match in each
//! earlier long string, and with that string's start. Strings that hold a
//! lone-surrogate marker are never shared (their bytes are decoded in
//! place).

use bytes::{Bytes, BytesMut};
use memchr::memchr;
use serde::Serialize;
use serde_json::ser::Formatter;
use std::cell::RefCell;
use std::io::{self, IoSlice, Write};
use std::rc::Rc;
use std::sync::Arc;

/// Strings whose escaped text is at least this long are shared.
pub const SHARE_MIN: usize = 64 * 1024;

/// At most this many long strings are kept to be matched against; later
/// ones are still written, only not offered for sharing.
const KNOWN_MAX: usize = 16;

/// Compact JSON text as a list of byte segments, some of which may share
/// memory with each other (see the module doc). Cloning shares everything.
#[derive(Debug, Clone, Default)]
pub struct JsonRope {
    segments: Arc<[Bytes]>,
    len: usize,
}

impl JsonRope {
    /// `bytes` as a rope of one segment.
    pub fn from_vec(bytes: Vec<u8>) -> Self {
        let len = bytes.len();
        Self {
            segments: Arc::from([Bytes::from(bytes)]),
            len,
        }
    }

    /// Total length of the text in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the text is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The segments, in order.
    pub fn segments(&self) -> &[Bytes] {
        &self.segments
    }

    /// The text as one contiguous copy.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len);
        for segment in self.segments.iter() {
            out.extend_from_slice(segment);
        }
        out
    }

    /// Whether `byte` occurs anywhere in the text.
    pub fn contains(&self, byte: u8) -> bool {
        self.segments.iter().any(|s| memchr(byte, s).is_some())
    }

    /// Writes the text to `out` with vectored writes.
    pub fn write_to(&self, out: &mut impl Write) -> io::Result<()> {
        write_all_vectored(out, &[], &self.segments, &[])
    }

    /// Writes the text and a `\n` to `out` with vectored writes.
    pub fn write_line_to(&self, out: &mut impl Write) -> io::Result<()> {
        write_all_vectored(out, &[], &self.segments, b"\n")
    }
}

impl PartialEq for JsonRope {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.to_vec() == other.to_vec()
    }
}

impl Eq for JsonRope {}

/// Writes `head`, then every segment, then `tail`, as vectored writes of at
/// most [`IOV_MAX`] slices each (a pipe gets a frame of fewer slices whole,
/// as from a single buffer).
pub(crate) fn write_all_vectored(
    out: &mut impl Write,
    head: &[u8],
    segments: &[Bytes],
    tail: &[u8],
) -> io::Result<()> {
    let parts = std::iter::once(head)
        .chain(segments.iter().map(|s| &s[..]))
        .chain(std::iter::once(tail));
    let mut parts: Vec<IoSlice<'_>> = parts.filter(|s| !s.is_empty()).map(IoSlice::new).collect();
    let mut rest = &mut parts[..];
    while !rest.is_empty() {
        let batch = rest.len().min(IOV_MAX);
        match out.write_vectored(&rest[..batch]) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => IoSlice::advance_slices(&mut rest, n),
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(())
}

/// Slices handed to one `writev` (the Linux limit is 1024).
const IOV_MAX: usize = 1024;

/// Serialises `value` as compact JSON into a [`JsonRope`], lone-surrogate
/// markers written back as `\udXXX` escapes.
pub fn to_rope<T: Serialize + ?Sized>(value: &T) -> serde_json::Result<JsonRope> {
    to_rope_sharing(value, &[]).map(|(rope, _)| rope)
}

/// [`to_rope`] that may also share the long strings `recent` holds (those
/// an earlier call returned: a `tool/call`'s arguments are the text of the
/// `assistant/message` before it). Returns the rope and the long strings
/// it holds, to offer to the next call; a string of `recent` that this
/// value does not repeat is not returned, so it is not kept alive.
pub fn to_rope_sharing<T: Serialize + ?Sized>(
    value: &T,
    recent: &[Bytes],
) -> serde_json::Result<(JsonRope, Vec<Bytes>)> {
    let builder = Builder {
        known: recent
            .iter()
            .take(KNOWN_MAX)
            .map(|bytes| Known {
                bytes: bytes.clone(),
                cursor: bytes.len(),
                used: false,
            })
            .collect(),
        // What `serde_json::to_vec` starts with.
        owned: BytesMut::with_capacity(128),
        ..Builder::default()
    };
    let state = Rc::new(RefCell::new(builder));
    let mut serializer = serde_json::Serializer::with_formatter(
        RopeWriter(Rc::clone(&state)),
        RopeFormatter(Rc::clone(&state)),
    );
    value.serialize(&mut serializer)?;
    drop(serializer);
    let builder = Rc::try_unwrap(state)
        .map(RefCell::into_inner)
        .unwrap_or_else(|shared| shared.replace(Builder::default()));
    Ok(builder.finish())
}

/// A long string seen earlier, offered for sharing.
struct Known {
    bytes: Bytes,
    /// Where the last string that matched it ended.
    cursor: usize,
    /// Whether the value being serialised holds (part of) it.
    used: bool,
}

/// The string being written matches `known[index][from..at]` so far.
#[derive(Clone, Copy)]
struct Match {
    index: usize,
    from: usize,
    at: usize,
}

/// The string being written.
enum InString {
    /// Nothing written yet.
    Empty,
    /// Every byte so far equals a run of a known string; none is buffered.
    Matching(Match),
    /// Its bytes are buffered in `owned` from `start`.
    Owned { start: usize },
}

#[derive(Default)]
struct Builder {
    /// Finished segments.
    done: Vec<Bytes>,
    /// Bytes not yet made a segment (markers not yet decoded).
    owned: BytesMut,
    known: Vec<Known>,
    string: Option<InString>,
    len: usize,
}

impl Builder {
    fn write(&mut self, buf: &[u8]) {
        match self.string.take() {
            None => self.owned.extend_from_slice(buf),
            Some(InString::Empty) => {
                self.string = Some(match self.find(buf) {
                    Some(found) => InString::Matching(found),
                    None => {
                        let start = self.owned.len();
                        self.owned.extend_from_slice(buf);
                        InString::Owned { start }
                    }
                });
            }
            Some(InString::Matching(mut found)) => {
                let continues = self.known[found.index]
                    .bytes
                    .get(found.at..)
                    .is_some_and(|rest| rest.starts_with(buf));
                if continues {
                    found.at += buf.len();
                    self.string = Some(InString::Matching(found));
                } else {
                    let start = self.owned.len();
                    self.materialise(found);
                    self.owned.extend_from_slice(buf);
                    self.string = Some(InString::Owned { start });
                }
            }
            Some(owned @ InString::Owned { .. }) => {
                self.owned.extend_from_slice(buf);
                self.string = Some(owned);
            }
        }
    }

    /// A known string that `first` (a string's first piece) continues:
    /// after its last match, or from its start.
    fn find(&self, first: &[u8]) -> Option<Match> {
        self.known.iter().enumerate().find_map(|(index, known)| {
            [known.cursor, 0].into_iter().find_map(|from| {
                known
                    .bytes
                    .get(from..)
                    .is_some_and(|rest| rest.starts_with(first))
                    .then_some(Match {
                        index,
                        from,
                        at: from + first.len(),
                    })
            })
        })
    }

    /// Buffers the bytes a match stood for.
    fn materialise(&mut self, found: Match) {
        let bytes = &self.known[found.index].bytes[found.from..found.at];
        self.owned.extend_from_slice(bytes);
    }

    fn begin_string(&mut self) {
        self.string = Some(InString::Empty);
    }

    fn end_string(&mut self) {
        match self.string.take() {
            None | Some(InString::Empty) => {}
            Some(InString::Matching(found)) if found.at - found.from >= SHARE_MIN => {
                self.flush_owned();
                let known = &mut self.known[found.index];
                known.cursor = found.at;
                known.used = true;
                let slice = known.bytes.slice(found.from..found.at);
                self.push(slice);
            }
            Some(InString::Matching(found)) => self.materialise(found),
            Some(InString::Owned { start }) => {
                let long = self.owned.len() - start >= SHARE_MIN;
                if long
                    && self.known.len() < KNOWN_MAX
                    && memchr(0xF4, &self.owned[start..]).is_none()
                {
                    let text = self.owned.split_off(start).freeze();
                    self.flush_owned();
                    self.known.push(Known {
                        bytes: text.clone(),
                        cursor: text.len(),
                        used: true,
                    });
                    self.push(text);
                }
            }
        }
    }

    /// Makes the buffered bytes a segment, markers decoded.
    fn flush_owned(&mut self) {
        if self.owned.is_empty() {
            return;
        }
        // Taken whole, not split: an unshared buffer freezes without an
        // allocation.
        let bytes = std::mem::take(&mut self.owned).freeze();
        let bytes = if memchr(0xF4, &bytes).is_some() {
            Bytes::from(crate::surrogates::decode(bytes.to_vec()))
        } else {
            bytes
        };
        self.push(bytes);
    }

    fn push(&mut self, segment: Bytes) {
        self.len += segment.len();
        self.done.push(segment);
    }

    fn finish(mut self) -> (JsonRope, Vec<Bytes>) {
        self.flush_owned();
        let rope = JsonRope {
            segments: Arc::from(self.done),
            len: self.len,
        };
        let held = self
            .known
            .into_iter()
            .filter(|known| known.used)
            .map(|known| known.bytes)
            .collect();
        (rope, held)
    }
}

/// The writer serde_json writes to: every byte goes to the builder.
struct RopeWriter(Rc<RefCell<Builder>>);

impl Write for RopeWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.borrow_mut().write(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// serde_json's compact formatter that also tells the builder where each
/// string's text begins and ends.
struct RopeFormatter(Rc<RefCell<Builder>>);

impl Formatter for RopeFormatter {
    fn begin_string<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        writer.write_all(b"\"")?;
        self.0.borrow_mut().begin_string();
        Ok(())
    }

    fn end_string<W: ?Sized + Write>(&mut self, writer: &mut W) -> io::Result<()> {
        self.0.borrow_mut().end_string();
        writer.write_all(b"\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    fn plain(value: &Value) -> Vec<u8> {
        crate::surrogates::decode(serde_json::to_vec(value).unwrap_or_default())
    }

    /// Bytes held by distinct allocations among the segments.
    fn distinct_bytes(rope: &JsonRope) -> usize {
        let mut seen: Vec<(usize, usize)> = Vec::new();
        for s in rope.segments() {
            let (start, end) = (s.as_ptr() as usize, s.as_ptr() as usize + s.len());
            if !seen.iter().any(|&(a, b)| start >= a && end <= b) {
                seen.retain(|&(a, b)| !(a >= start && b <= end));
                seen.push((start, end));
            }
        }
        seen.iter().map(|(a, b)| b - a).sum()
    }

    #[test]
    fn an_escaped_text_repeated_is_held_once() {
        let text = "a line with \"quotes\",\ttabs and \u{e9}\n".repeat(8_000);
        let (a, b) = text.split_at(text.len() / 3);
        let event = json!({"content": text, "texts": [a, b], "block": {"text": text}});
        let rope = to_rope(&event).unwrap_or_default();
        assert_eq!(rope.to_vec(), plain(&event));
        let held = distinct_bytes(&rope);
        assert!(
            held < rope.len() / 2,
            "{held} bytes held for {}",
            rope.len()
        );
    }

    #[test]
    fn a_block_repeated_with_its_deltas_is_held_once() {
        let text: String = (0..200_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let args = json!({"path": "big.txt", "content": text}).to_string();
        let (a, b) = args.split_at(args.len() / 2);
        let event = json!({
            "message": {"content": [{"type": "tool-call", "arguments": args}]},
            "stream": [
                {"type": "tool-call-chunks", "args": [a, b]},
                {"type": "chunk", "chunk": {"block": {"type": "tool-call", "arguments": args}}}
            ]
        });
        let rope = to_rope(&event).unwrap_or_default();
        assert_eq!(rope.to_vec(), plain(&event));
        assert_eq!(rope.len(), plain(&event).len());
        let held = distinct_bytes(&rope);
        assert!(
            held < rope.len() / 2,
            "{held} bytes held for a {}-byte text",
            rope.len()
        );
    }

    #[test]
    fn a_later_value_shares_the_long_strings_of_an_earlier_one() {
        let args = format!("{{\"content\":\"{}\"}}", "q".repeat(SHARE_MIN * 2));
        let message = json!({"content": [{"arguments": args}]});
        let (first, recent) = to_rope_sharing(&message, &[]).unwrap_or_default();
        assert_eq!(first.to_vec(), plain(&message));
        assert_eq!(recent.len(), 1);
        let call = json!({"type": "tool/call", "arguments": args});
        let (second, recent) = to_rope_sharing(&call, &recent).unwrap_or_default();
        assert_eq!(second.to_vec(), plain(&call));
        let shared = first.segments().iter().any(|a| {
            second
                .segments()
                .iter()
                .any(|b| a.len() > SHARE_MIN && a.as_ptr() == b.as_ptr())
        });
        assert!(shared, "the arguments are not copied again");
        assert_eq!(recent.len(), 1);
        // A value without the string lets it go.
        let (_, recent) =
            to_rope_sharing(&json!({"type": "turn/end"}), &recent).unwrap_or_default();
        assert!(recent.is_empty());
    }

    #[test]
    fn short_strings_and_markers_are_written_as_they_are() {
        let marker = "\u{10FFFF}\u{10F000}";
        let long_with_marker = format!("{}{marker}", "y".repeat(SHARE_MIN));
        let event = json!({
            "a": "x".repeat(SHARE_MIN + 1),
            "b": "x",
            "c": "x".repeat(100),
            "d": long_with_marker,
            "e": long_with_marker,
            "f": ["\n\"", 1, null, true, 2.5],
        });
        let rope = to_rope(&event).unwrap_or_default();
        let bytes = rope.to_vec();
        assert_eq!(bytes, plain(&event));
        assert!(String::from_utf8_lossy(&bytes).contains("\\ud800"));
    }

    #[test]
    fn writes_whole_through_a_short_writer() {
        struct Trickle(Vec<u8>);
        impl Write for Trickle {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let n = buf.len().min(7);
                self.0.extend_from_slice(&buf[..n]);
                Ok(n)
            }
            fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
                let first = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| b);
                self.write(first)
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let event = json!({"t": "z".repeat(SHARE_MIN), "u": "z".repeat(SHARE_MIN)});
        let rope = to_rope(&event).unwrap_or_default();
        assert!(rope.segments().len() > 2);
        let mut out = Trickle(Vec::new());
        rope.write_to(&mut out).unwrap_or_default();
        assert_eq!(out.0, plain(&event));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_split_of_a_long_text_serialises_exactly(
            seed in proptest::collection::vec(any::<char>(), 1..64),
            cuts in proptest::collection::vec(0usize..1000, 0..6),
            repeat in 1usize..3000,
        ) {
            let unit: String = seed.into_iter().collect();
            let text = unit.repeat(repeat);
            let mut cuts: Vec<usize> = cuts
                .into_iter()
                .map(|c| {
                    let mut c = c * text.len() / 1000;
                    while !text.is_char_boundary(c) { c -= 1; }
                    c
                })
                .collect();
            cuts.sort_unstable();
            let mut parts = Vec::new();
            let mut last = 0;
            for c in cuts.into_iter().chain([text.len()]) {
                parts.push(&text[last..c]);
                last = c;
            }
            let event = json!({"content": text, "texts": parts, "block": {"text": text}});
            let rope = to_rope(&event).unwrap_or_default();
            prop_assert_eq!(rope.to_vec(), plain(&event));
        }
    }
}
