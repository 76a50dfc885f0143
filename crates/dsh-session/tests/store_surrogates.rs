//! Lone surrogates in session logs: written as `\udXXX` escapes (as the
//! official runtime writes them), read back into the same markers, so a
//! resumed session keeps them.

mod common;

use common::{read, temp};
use dsh_protocol::catalog::SessionEvent;
use dsh_protocol::{Incoming, classify};
use dsh_session::store::{Encoding, SessionHeader, SessionStore, SessionWriter};
use serde_json::{Value, json};

/// The params of a request line, as the server sees them.
fn params(line: &str) -> Value {
    match classify(line.as_bytes()) {
        Incoming::Request(request) => Value::Object(request.params),
        other => panic!("not a request: {other:?}"),
    }
}

#[test]
fn lone_surrogates_are_escaped_on_disk_and_markers_again_when_read() {
    // Deeper than serde_json's own limit of 128 levels.
    let deep = format!("{}1{}", "[".repeat(150), "]".repeat(150));
    let data = params(&format!(
        r#"{{"id":1,"method":"m","params":{{"text":"a\ud800b \udfff \ud83d\ude00 \udbff\udfff","deep":{deep}}}}}"#
    ));
    for encoding in [Encoding::Plain, Encoding::Zstd] {
        let home = temp();
        let store = SessionStore::new(home.path());
        let header = SessionHeader::root("s-sur", 1_796_008_646_846, Some("/ws".to_owned()));
        let mut writer = SessionWriter::create(&store, &header, encoding).unwrap();
        let event = SessionEvent {
            kind: "turn/start".to_owned(),
            seq: 0,
            time: 1_796_008_646_900,
            data: data.clone(),
            source_event_seqs: None,
            surface_op: None,
            ignorable: None,
        };
        let line = serde_json::to_string(&event).unwrap();
        writer.append(&line).unwrap();
        writer.flush().unwrap();
        let location = writer.location().clone();
        writer.close().unwrap();
        if encoding == Encoding::Plain {
            let bytes = std::fs::read(&location.file).unwrap_or_default();
            let text = String::from_utf8(bytes).unwrap_or_default();
            assert!(
                text.contains("a\\ud800b \\udfff \u{1F600} \u{10FFFF}\""),
                "{text}"
            );
            assert!(!text.contains('\u{10F000}'));
        }
        let stored = read(&location);
        assert_eq!(stored.events.len(), 1);
        assert_eq!(stored.events[0].data, data);
        assert_eq!(
            stored.events[0].data["text"],
            json!("a\u{10FFFF}\u{10F000}b \u{10FFFF}\u{10F7FF} \u{1F600} \u{10FFFF}\u{10FFFF}")
        );
    }
}
