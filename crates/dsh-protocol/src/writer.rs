use crate::Outgoing;
use std::io::Write;
use std::sync::mpsc;
use std::thread;

enum Command {
    Frame(Outgoing),
    Flush(mpsc::SyncSender<()>),
}

/// The single writer of the protocol channel.
///
/// Frames sent from any thread or task are written by one dedicated thread,
/// each with a single `write_all` of the whole frame followed by a flush, in
/// the order they were sent. Nothing else may write to the protocol fd.
#[derive(Clone)]
pub struct FrameWriter {
    tx: mpsc::Sender<Command>,
}

impl FrameWriter {
    /// Starts the writer thread over `out` (normally the protocol's stdout).
    pub fn spawn<W: Write + Send + 'static>(
        out: W,
    ) -> std::io::Result<(Self, thread::JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel();
        let handle = thread::Builder::new()
            .name("dsh-frame-writer".into())
            .spawn(move || write_loop(out, rx))?;
        Ok((Self { tx }, handle))
    }

    /// Queues one frame. Frames are written in the order of these calls.
    pub fn send(&self, frame: Outgoing) {
        if self.tx.send(Command::Frame(frame)).is_err() {
            tracing::debug!("frame dropped: the protocol writer has stopped");
        }
    }

    /// Waits until every frame queued before this call has been handed to
    /// the operating system (or the channel has failed).
    pub fn flush(&self) {
        let (done_tx, done_rx) = mpsc::sync_channel(1);
        if self.tx.send(Command::Flush(done_tx)).is_ok() {
            let _ = done_rx.recv();
        }
    }
}

fn write_loop<W: Write>(mut out: W, rx: mpsc::Receiver<Command>) {
    let mut broken = false;
    for command in rx {
        match command {
            Command::Frame(frame) if !broken => {
                if let Err(err) = frame.write_to(&mut out).and_then(|()| out.flush()) {
                    tracing::warn!("protocol output failed, dropping further frames: {err}");
                    broken = true;
                }
            }
            Command::Frame(_) => {}
            Command::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RequestId;
    use std::sync::{Arc, Mutex};

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::ErrorKind::Other)?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn frames_from_many_threads_are_written_whole_and_in_order_per_thread() {
        let sink = Shared::default();
        let (writer, handle) = FrameWriter::spawn(sink.clone()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let writer = writer.clone();
                thread::spawn(move || {
                    for i in 0..200 {
                        writer.send(Outgoing::error(
                            &RequestId::Num(i.into()),
                            &format!("t{t}-{}", "x".repeat(i as usize)),
                        ));
                    }
                })
            })
            .collect();
        for t in threads {
            let _ = t.join();
        }
        writer.flush();
        drop(writer);
        let _ = handle.join();
        let bytes = sink.0.lock().map(|b| b.clone()).unwrap_or_default();
        let text = String::from_utf8(bytes).unwrap_or_default();
        let mut last = [-1i64; 4];
        let mut count = 0;
        for line in text.lines() {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            let message = v["error"]["message"].as_str().unwrap_or_default();
            let t: usize = message[1..2].parse().unwrap_or(9);
            let id = v["id"].as_i64().unwrap_or(-1);
            assert!(id > last[t], "frames of one thread out of order");
            last[t] = id;
            count += 1;
        }
        assert_eq!(count, 800);
    }
}
