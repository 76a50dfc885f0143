//! SSE decoding of one huge delta (issue 15, row 9): a 16 MiB and a
//! 64 MiB `content_block_delta` event fed in 16 KiB network-sized pieces,
//! and the same 64 MiB fed byte-ranges of 1 MiB. Linear decoding keeps the
//! 64 MiB case well under a second (it took more than 55 s before).

use criterion::{Criterion, criterion_group, criterion_main};
use dsh_llm::sse::SseDecoder;
use std::hint::black_box;
use std::time::Duration;

fn huge_delta(bytes: usize) -> Vec<u8> {
    let mut frame = Vec::with_capacity(bytes + 256);
    frame.extend_from_slice(b"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"");
    frame.extend(std::iter::repeat_n(b'x', bytes));
    frame.extend_from_slice(b"\"}}\n\n");
    frame
}

fn decode(frame: &[u8], piece: usize) -> usize {
    let mut decoder = SseDecoder::new();
    frame
        .chunks(piece)
        .flat_map(|chunk| decoder.push(chunk))
        .map(|event| event.data.len())
        .sum()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse");
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    for (name, mib, piece) in [
        ("one 16 MiB delta, 16 KiB pieces", 16, 16 << 10),
        ("one 64 MiB delta, 16 KiB pieces", 64, 16 << 10),
        ("one 64 MiB delta, 1 MiB pieces", 64, 1 << 20),
    ] {
        let frame = huge_delta(mib << 20);
        group.bench_function(name, |b| b.iter(|| black_box(decode(&frame, piece))));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
