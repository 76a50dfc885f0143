//! Server-sent events: incremental decoding of a byte stream into events.
//!
//! Small enough to own: lines split on `\n` (a trailing `\r` dropped),
//! `event:` and `data:` fields (one optional space after the colon), comment
//! lines ignored, an event dispatched at each blank line. Multi-line data is
//! joined with `\n`.
//!
//! Linear in its input however the bytes are split: each byte is searched
//! for a line end once, only an unfinished line is buffered (so nothing is
//! ever removed from the front of a buffer), and a line reaches its event's
//! data in at most one copy (a buffered `data:` line none, it becomes the
//! data).

/// A drained line buffer larger than this gives its memory back.
const KEEP_CAPACITY: usize = 1 << 16;

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` name, if any.
    pub event: Option<String>,
    /// The `data:` payload.
    pub data: String,
}

/// Incremental SSE decoder.
#[derive(Debug, Default)]
pub struct SseDecoder {
    /// The unfinished last line (never holds a `\n`).
    partial: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl SseDecoder {
    /// An empty decoder.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; returns the events completed by them.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut rest = bytes;
        if !self.partial.is_empty() {
            let Some(end) = memchr::memchr(b'\n', rest) else {
                self.partial.extend_from_slice(rest);
                return events;
            };
            self.partial.extend_from_slice(&rest[..end]);
            rest = &rest[end + 1..];
            let line = std::mem::take(&mut self.partial);
            events.extend(self.owned_line(line));
        }
        // Lines wholly inside `bytes` are read in place.
        while let Some(end) = memchr::memchr(b'\n', rest) {
            events.extend(self.line(&rest[..end]));
            rest = &rest[end + 1..];
        }
        self.partial.extend_from_slice(rest);
        events
    }

    /// A buffered line: a `data:` line starting the event's data becomes
    /// it without a copy; the buffer is kept for reuse when small.
    fn owned_line(&mut self, mut line: Vec<u8>) -> Option<SseEvent> {
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if self.data.is_none() && line.starts_with(b"data:") {
            let skip = if line.get(5) == Some(&b' ') { 6 } else { 5 };
            line.drain(..skip);
            self.data = Some(match String::from_utf8(line) {
                Ok(text) => text,
                Err(err) => String::from_utf8_lossy(err.as_bytes()).into_owned(),
            });
            return None;
        }
        // Its `\r` is gone already: a second one is the line's own.
        let event = self.field(&String::from_utf8_lossy(&line));
        if line.capacity() <= KEEP_CAPACITY {
            line.clear();
            self.partial = line;
        }
        event
    }

    fn line(&mut self, line: &[u8]) -> Option<SseEvent> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        self.field(&String::from_utf8_lossy(line))
    }

    fn field(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            let data = self.data.take()?;
            return Some(SseEvent {
                event: self.event.take(),
                data,
            });
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "event" => self.event = Some(value.to_owned()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_owned()),
            },
            _ => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_events_split_anywhere() {
        let text = "event: a\r\ndata: {\"x\":1}\r\n\r\n: comment\n\ndata: one\ndata: two\n\nevent: b\ndata:tight\n\n";
        for cut in 0..text.len() {
            let mut d = SseDecoder::new();
            let mut events = d.push(&text.as_bytes()[..cut]);
            events.extend(d.push(&text.as_bytes()[cut..]));
            assert_eq!(
                events,
                vec![
                    SseEvent {
                        event: Some("a".into()),
                        data: "{\"x\":1}".into()
                    },
                    SseEvent {
                        event: None,
                        data: "one\ntwo".into()
                    },
                    SseEvent {
                        event: Some("b".into()),
                        data: "tight".into()
                    },
                ],
                "cut at {cut}"
            );
        }
    }
}

#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Streams made of SSE-like pieces (so that events do occur) mixed
    /// with arbitrary bytes, invalid UTF-8 and CR/LF included.
    fn stream() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            Just(b"data: ".to_vec()),
            Just(b"data:".to_vec()),
            Just(b"event: e".to_vec()),
            Just(b": note".to_vec()),
            Just(b"\n".to_vec()),
            Just(b"\r\n".to_vec()),
            Just(b"\n\n".to_vec()),
            Just(vec![0xe2, 0x82]),
            Just(vec![0xac]),
            proptest::collection::vec(any::<u8>(), 0..16),
            "[a-z{}\":]{0,12}".prop_map(String::into_bytes),
        ];
        proptest::collection::vec(piece, 0..64).prop_map(|pieces| pieces.concat())
    }

    proptest! {
        #[test]
        fn decoding_does_not_depend_on_how_bytes_are_split(
            input in stream(),
            cuts in proptest::collection::vec(any::<prop::sample::Index>(), 0..8),
        ) {
            let mut whole = SseDecoder::new();
            let expected = whole.push(&input);
            let mut at: Vec<usize> = cuts.iter().map(|c| c.index(input.len() + 1)).collect();
            at.sort_unstable();
            let mut split = SseDecoder::new();
            let mut got = Vec::new();
            let mut from = 0;
            for to in at.into_iter().chain([input.len()]) {
                got.extend(split.push(&input[from..to]));
                from = to;
            }
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn byte_by_byte_equals_whole(input in stream()) {
            let expected = SseDecoder::new().push(&input);
            let mut split = SseDecoder::new();
            let got: Vec<SseEvent> = input.iter().flat_map(|b| split.push(std::slice::from_ref(b))).collect();
            prop_assert_eq!(got, expected);
        }
    }
}
