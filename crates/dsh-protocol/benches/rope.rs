//! Cost of serialising events into a `JsonRope` against one buffer
//! (`serde_json::to_vec` and the surrogate decode, what events used
//! before): a typical small event, and an `assistant/message` whose 1 MiB
//! and 32 MiB reply the official format carries three times (content,
//! deltas, `block-end`), which the rope holds once.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dsh_protocol::{surrogates, to_rope};
use serde_json::{Value, json};
use std::hint::black_box;

/// An `assistant/message` event carrying `text` as content, as 64 deltas
/// and as its block end.
fn reply_event(text: &str) -> Value {
    let step = text.len().div_ceil(64);
    let mut deltas = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let mut end = (at + step).min(text.len());
        while !text.is_char_boundary(end) {
            end += 1;
        }
        deltas.push(&text[at..end]);
        at = end;
    }
    json!({"type": "assistant/message", "seq": 14, "time": 1_796_008_595_440u64, "data": {
        "turn": 1, "step": 1,
        "message": {"role": "assistant", "content": [{"type": "text", "text": text}]},
        "stream": [
            {"type": "text-chunks", "time0": 1, "index": 0, "dt": vec![0; deltas.len() - 1], "texts": deltas},
            {"type": "chunk", "time": 2, "chunk": {"type": "block-end", "index": 0, "block": {"type": "text", "text": text}}}
        ]
    }, "surfaceOp": "append"})
}

fn bench(c: &mut Criterion) {
    let small = json!({"type": "tool/call", "seq": 15, "time": 1_796_008_595_441u64,
        "data": {"turn": 1, "step": 1, "callId": "toolu_fake_bash_1", "name": "bash",
        "arguments": "{\"description\":\"Print hi\",\"command\":\"echo hi\"}"}});
    let mut group = c.benchmark_group("event serialisation");
    group.bench_function("small event: to_rope", |b| {
        b.iter(|| to_rope(black_box(&small)).map(|r| r.len()))
    });
    group.bench_function("small event: to_vec + decode", |b| {
        b.iter(|| serde_json::to_vec(black_box(&small)).map(|v| surrogates::decode(v).len()))
    });
    for mib in [1usize, 32] {
        let text =
            "a reply of word-like text, \"quoted\", with tabs\tand é; ".repeat((mib << 20) / 56);
        let event = reply_event(&text);
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.sample_size(10);
        group.bench_function(format!("{mib} MiB reply: to_rope"), |b| {
            b.iter(|| to_rope(black_box(&event)).map(|r| r.len()))
        });
        group.bench_function(format!("{mib} MiB reply: to_vec + decode"), |b| {
            b.iter(|| serde_json::to_vec(black_box(&event)).map(|v| surrogates::decode(v).len()))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
