//! Fuzzes the input side of the transport: line splitting and
//! classification must never panic, every request they produce must be
//! answerable with a single-line frame, and a line whose id is readable is
//! never left unanswered: it is a request or an invalid line answered with
//! that id, or (as the official runtime treats it) a JSON object without a
//! string `method`, i.e. a response.
#![no_main]

use dsh_protocol::{Incoming, LineReader, Outgoing, classify, lenient, recover_id};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn assert_one_line(frame: &Outgoing) {
    let bytes = frame.as_bytes();
    assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
    assert!(lenient::from_slice::<Value>(bytes).is_ok());
}

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(async {
        let mut reader = LineReader::new(data);
        while let Ok(Some(line)) = reader.next_line().await {
            let recovered = recover_id(line);
            match classify(line) {
                Incoming::Request(request) => {
                    assert_eq!(Some(&request.id), recovered.as_ref());
                    assert_one_line(&Outgoing::error(&request.id, &request.method));
                }
                Incoming::Invalid(invalid) => {
                    assert_eq!(Some(&invalid.id), recovered.as_ref());
                    assert_one_line(&invalid.answer());
                }
                Incoming::Response(id) => {
                    assert_eq!(Some(&id), recovered.as_ref());
                    let text = String::from_utf8_lossy(line);
                    let value: Value = lenient::from_str(&text).expect("a response is JSON");
                    assert!(!value.get("method").is_some_and(Value::is_string));
                }
                Incoming::Notification(_) | Incoming::Ignored(_) => {
                    assert_eq!(recovered, None, "{:?}", String::from_utf8_lossy(line));
                }
            }
        }
    });
});
