//! Server-sent events: incremental decoding of a byte stream into events.
//!
//! Small enough to own: lines split on `\n` (a trailing `\r` dropped),
//! `event:` and `data:` fields (one optional space after the colon), comment
//! lines ignored, an event dispatched at each blank line. Multi-line data is
//! joined with `\n`.

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
    buffer: Vec<u8>,
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
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let mut line: Vec<u8> = self.buffer.drain(..=end).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            if let Some(event) = self.line(&String::from_utf8_lossy(&line)) {
                events.push(event);
            }
        }
        events
    }

    fn line(&mut self, line: &str) -> Option<SseEvent> {
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

    proptest! {
        #[test]
        fn decoding_does_not_depend_on_how_bytes_are_split(input in proptest::collection::vec(any::<u8>(), 0..2048), cut in any::<prop::sample::Index>()) {
            let mut whole = SseDecoder::new();
            let expected = whole.push(&input);
            let at = cut.index(input.len() + 1);
            let mut split = SseDecoder::new();
            let mut got = split.push(&input[..at]);
            got.extend(split.push(&input[at..]));
            prop_assert_eq!(got, expected);
        }
    }
}
