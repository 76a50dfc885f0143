//! Fuzzes the input side of the transport: line splitting and
//! classification must never panic, and every request they produce must be
//! answerable with a single-line frame.
#![no_main]

use dsh_protocol::{Incoming, LineReader, Outgoing, classify};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
    runtime.block_on(async {
        let mut reader = LineReader::new(data);
        while let Ok(Some(line)) = reader.next_line().await {
            if let Incoming::Request(request) = classify(line) {
                let frame = Outgoing::error(&request.id, &request.method);
                let bytes = frame.as_bytes();
                assert_eq!(bytes.iter().filter(|b| **b == b'\n').count(), 1);
                assert!(serde_json::from_slice::<serde_json::Value>(bytes).is_ok());
            }
        }
    });
});
