//! Cost of reading request lines: `classify` (lossy UTF-8, the surrogate
//! scan, the parse, the id) against the strict classification it replaced
//! (a lone surrogate makes that one fail fast), for a typical
//! SDK prompt (Python escapes non-ASCII as `\uXXXX`), a 1 MiB prompt, and a
//! prompt with lone surrogates; and the frame-side `decode` of a 1 MiB
//! frame without markers.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use dsh_protocol::{JsonObject, RequestId, classify, surrogates};
use serde_json::Value;
use std::hint::black_box;

/// `classify` as it was before lines were read leniently: a strict parse
/// and the same member lookups.
fn strict_classify(line: &[u8]) -> Option<(RequestId, String, JsonObject)> {
    let Value::Object(mut object) = serde_json::from_slice::<Value>(line).ok()? else {
        return None;
    };
    let id = object.get("id").and_then(RequestId::from_value)?;
    let Some(Value::String(method)) = object.remove("method") else {
        return None;
    };
    let params = match object.remove("params") {
        Some(Value::Object(params)) => params,
        _ => JsonObject::new(),
    };
    Some((id, method, params))
}

fn prompt_line(text: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":"5d0c3c5e-8f5e-4a53-9d0e-5b7f3f1e2a11","method":"session/prompt","params":{{"sessionId":"session-bench","contentBlocks":[{{"type":"text","text":"{text}"}}]}}}}"#
    )
}

fn bench(c: &mut Criterion) {
    let typical =
        prompt_line(r"Please summarise the file notes.txt for me, caf\u00e9 \ud83d\ude00");
    let large = prompt_line(&"lorem ipsum dolor sit amet \\u00e9 ".repeat(1 << 15));
    let lone = prompt_line(r"half a pair: \ud83d and \ude00 alone");
    let mut group = c.benchmark_group("classify");
    for (name, line) in [
        ("typical", &typical),
        ("1MiB", &large),
        ("lone-surrogates", &lone),
    ] {
        group.throughput(Throughput::Bytes(line.len() as u64));
        group.bench_function(format!("{name}/classify"), |b| {
            b.iter(|| classify(black_box(line.as_bytes())))
        });
        group.bench_function(format!("{name}/strict-before"), |b| {
            b.iter(|| strict_classify(black_box(line.as_bytes())))
        });
        group.bench_function(format!("{name}/surrogate-scan"), |b| {
            b.iter(|| surrogates::encode(black_box(line)).len())
        });
    }
    group.finish();
    let frame = large.clone().into_bytes();
    let mut group = c.benchmark_group("decode");
    group.throughput(Throughput::Bytes(frame.len() as u64));
    group.bench_function("1MiB-frame", |b| {
        b.iter(|| surrogates::decode(black_box(frame.clone())))
    });
    group.bench_function("1MiB-frame-copy-only", |b| {
        b.iter(|| black_box(frame.clone()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
