//! Big events are serialised and written off the async workers.
//!
//! Serialising an event and writing it to the log are synchronous: for a
//! reply of 100 MB (an `assistant/message` carries it three times) they
//! take a few hundred milliseconds, during which the worker thread running
//! them runs nothing else, and the tasks queued behind it (other sessions'
//! requests and turns) wait. An event whose text is at least
//! [`BIG_EVENT_BYTES`] is emitted inside `block_in_place`, which hands the
//! worker's queue to another thread first.

use serde_json::Value;
use tokio::runtime::{Handle, RuntimeFlavor};

/// Events carrying at least this many bytes of text leave the worker.
pub(crate) const BIG_EVENT_BYTES: usize = 1 << 20;

/// Runs `emit`, which appends an event carrying about `bytes` bytes of
/// text: on a multi-threaded runtime a big one runs in `block_in_place`.
pub(crate) fn emit_sized<R>(bytes: usize, emit: impl FnOnce() -> R) -> R {
    let multi = Handle::try_current()
        .is_ok_and(|handle| handle.runtime_flavor() == RuntimeFlavor::MultiThread);
    if bytes >= BIG_EVENT_BYTES && multi {
        tokio::task::block_in_place(emit)
    } else {
        emit()
    }
}

/// Bytes of text in content blocks (`text` and `arguments` strings).
pub(crate) fn content_bytes(content: &[Value]) -> usize {
    content
        .iter()
        .flat_map(|block| ["text", "arguments"].map(|field| block.get(field)))
        .flatten()
        .filter_map(Value::as_str)
        .map(str::len)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn content_bytes_counts_texts_and_arguments() {
        let content = [
            json!({"type": "text", "text": "abc"}),
            json!({"type": "tool-call", "arguments": "{\"a\":1}"}),
            json!({"type": "image", "attachment": {"sha256": "ff"}}),
        ];
        assert_eq!(content_bytes(&content), 3 + 7);
    }

    /// Whether a task spawned just before an emit of `bytes` runs while
    /// the emit blocks, on a runtime of one worker (the emit itself runs
    /// on that worker, as an agent's task does).
    fn other_task_runs_during_emit(bytes: usize) -> bool {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        runtime.block_on(async move {
            let on_worker = tokio::spawn(async move {
                let (tx, rx) = std::sync::mpsc::channel();
                let other = tokio::spawn(async move {
                    let _ = tx.send(());
                });
                let ran = emit_sized(bytes, || {
                    rx.recv_timeout(std::time::Duration::from_secs(2)).is_ok()
                });
                let _ = other.await;
                ran
            });
            on_worker.await.unwrap_or(false)
        })
    }

    #[test]
    fn a_big_event_leaves_the_worker_and_a_small_one_does_not() {
        assert!(other_task_runs_during_emit(BIG_EVENT_BYTES));
        assert!(!other_task_runs_during_emit(10));
    }

    #[test]
    fn outside_a_runtime_it_runs_in_place() {
        assert_eq!(emit_sized(BIG_EVENT_BYTES * 2, || 5), 5);
    }
}
