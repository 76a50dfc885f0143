//! [`FrameWriter`]: the one writer of the protocol channel, with its
//! lane of coalesced `session.delta` notifications.

use crate::Outgoing;
use crate::methods::SessionDeltaParams;
use crate::outgoing::write_session_delta;
use std::io::Write;
use std::sync::{Arc, Mutex, PoisonError, mpsc};
use std::thread;
use std::time::{Duration, Instant};

enum Command {
    Frame(Outgoing),
    Flush(mpsc::SyncSender<()>),
    /// The delta lane was empty and is not any more.
    Wake,
    /// Deltas sent before the frame that follows, taken off the lane.
    Deltas(Vec<Pending>),
}

/// How long a delta waits for the ones after it before it is written:
/// the deltas of one block arriving meanwhile go out as one.
const DELTA_WINDOW: Duration = Duration::from_millis(10);

/// Most bytes of delta text waiting to be written (a client that does not
/// read holds them up); past it further deltas are dropped (and counted
/// on stderr) until the lane drains. The committed events are never held
/// back or dropped.
const DELTA_BACKLOG_MAX: usize = 64 << 20;

/// Most capacity the delta frame buffer keeps between rounds.
const SCRATCH_KEEP: usize = 4 << 20;

/// Deltas waiting for the writer thread: one entry per stream (the same
/// session, turn, step, attempt, kind, index and call), in the order each
/// stream began; a delta joins its stream's entry. `bytes` counts every
/// delta byte not written yet, those taken off the lane included.
#[derive(Default)]
struct Lane {
    entries: Vec<Pending>,
    bytes: usize,
    dropped: u64,
}

/// One stream's deltas waiting: the first one's fields (its text moved to
/// `pieces`) and the texts, in order, never joined in memory.
struct Pending {
    params: SessionDeltaParams,
    pieces: Vec<String>,
}

impl Lane {
    /// Joins `delta` to its stream's entry; returns whether the lane was
    /// empty.
    fn push(&mut self, delta: SessionDeltaParams) -> bool {
        if self.bytes + delta.delta.len() > DELTA_BACKLOG_MAX {
            self.dropped += 1;
            return false;
        }
        self.bytes += delta.delta.len();
        let was_empty = self.entries.is_empty();
        match self
            .entries
            .iter_mut()
            .rev()
            .find(|entry| same_stream(&entry.params, &delta))
        {
            Some(entry) => entry.pieces.push(delta.delta),
            None => {
                let mut params = delta;
                let text = std::mem::take(&mut params.delta);
                self.entries.push(Pending {
                    params,
                    pieces: vec![text],
                });
            }
        }
        was_empty
    }
}

/// Whether two deltas continue the same stream.
fn same_stream(a: &SessionDeltaParams, b: &SessionDeltaParams) -> bool {
    a.index == b.index
        && a.kind == b.kind
        && a.step == b.step
        && a.turn == b.turn
        && a.attempt == b.attempt
        && a.call_id == b.call_id
        && a.session_id == b.session_id
}

/// The single writer of the protocol channel.
///
/// Frames sent from any thread or task are written by one dedicated thread,
/// each with a single `write_all` of the whole frame followed by a flush, in
/// the order they were sent. Nothing else may write to the protocol fd.
///
/// Deltas ([`send_delta`](Self::send_delta)) take a side lane: they wait
/// up to 10 ms, joined per stream, and keep their place among the frames
/// (a frame sent after a delta is written after it), so a client sees a
/// block's deltas before the event that commits it. A client that reads
/// slowly gets fewer, larger deltas, and what waits for it is bounded.
#[derive(Clone)]
pub struct FrameWriter {
    tx: mpsc::Sender<Command>,
    lane: Arc<Mutex<Lane>>,
}

impl FrameWriter {
    /// Starts the writer thread over `out` (normally the protocol's stdout).
    pub fn spawn<W: Write + Send + 'static>(
        out: W,
    ) -> std::io::Result<(Self, thread::JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel();
        let lane = Arc::new(Mutex::new(Lane::default()));
        let writer_lane = Arc::clone(&lane);
        let handle = thread::Builder::new()
            .name("dsh-frame-writer".into())
            .spawn(move || write_loop(out, rx, &writer_lane))?;
        Ok((Self { tx, lane }, handle))
    }

    /// Queues one delta on the lane (see the type's docs).
    pub fn send_delta(&self, delta: SessionDeltaParams) {
        let woke = self
            .lane
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(delta);
        if woke && self.tx.send(Command::Wake).is_err() {
            tracing::debug!("delta dropped: the protocol writer has stopped");
        }
    }

    /// Queues one frame. Frames are written in the order of these calls,
    /// after the deltas sent before them.
    pub fn send(&self, frame: Outgoing) {
        let mut lane = self.lane.lock().unwrap_or_else(PoisonError::into_inner);
        if !lane.entries.is_empty() {
            let sealed = std::mem::take(&mut lane.entries);
            let _ = self.tx.send(Command::Deltas(sealed));
        }
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

/// The writer thread: frames and sealed deltas in order; deltas still on
/// the lane go out when their window closes (or at a flush).
fn write_loop<W: Write>(mut out: W, rx: mpsc::Receiver<Command>, lane: &Mutex<Lane>) {
    let mut broken = false;
    // Delta frames are built here, its capacity kept between them.
    let mut scratch = Vec::new();
    let mut due: Option<Instant> = None;
    loop {
        let command = match due {
            None => rx.recv().ok(),
            Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Ok(command) => Some(command),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    due = None;
                    write_deltas(&mut out, lane, None, &mut scratch, &mut broken);
                    continue;
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => None,
            },
        };
        let Some(command) = command else {
            write_deltas(&mut out, lane, None, &mut scratch, &mut broken);
            return;
        };
        match command {
            Command::Wake => {
                due.get_or_insert_with(|| Instant::now() + DELTA_WINDOW);
            }
            Command::Deltas(sealed) => {
                write_deltas(&mut out, lane, Some(sealed), &mut scratch, &mut broken)
            }
            Command::Frame(frame) => write_frame(&mut out, &frame, &mut broken),
            Command::Flush(done) => {
                due = None;
                write_deltas(&mut out, lane, None, &mut scratch, &mut broken);
                let _ = done.send(());
            }
        }
    }
}

/// Writes one frame and flushes, unless the output has failed.
fn write_frame<W: Write>(out: &mut W, frame: &Outgoing, broken: &mut bool) {
    if *broken {
        return;
    }
    if let Err(err) = frame.write_to(out).and_then(|()| out.flush()) {
        tracing::warn!("protocol output failed, dropping further frames: {err}");
        *broken = true;
    }
}

/// Writes `sealed`, or (`None`) every delta waiting on the lane, and
/// takes their bytes off the backlog.
fn write_deltas<W: Write>(
    out: &mut W,
    lane: &Mutex<Lane>,
    sealed: Option<Vec<Pending>>,
    scratch: &mut Vec<u8>,
    broken: &mut bool,
) {
    let (entries, dropped) = {
        let mut lane = lane.lock().unwrap_or_else(PoisonError::into_inner);
        let entries = sealed.unwrap_or_else(|| std::mem::take(&mut lane.entries));
        let bytes: usize = entries
            .iter()
            .flat_map(|e| &e.pieces)
            .map(String::len)
            .sum();
        lane.bytes = lane.bytes.saturating_sub(bytes);
        (entries, std::mem::take(&mut lane.dropped))
    };
    if dropped > 0 {
        tracing::warn!(
            dropped,
            "session.delta notifications dropped: the client is not reading"
        );
    }
    for entry in entries {
        if *broken {
            return;
        }
        scratch.clear();
        write_session_delta(scratch, &entry.params, &entry.pieces);
        if let Err(err) = out.write_all(scratch).and_then(|()| out.flush()) {
            tracing::warn!("protocol output failed, dropping further frames: {err}");
            *broken = true;
        }
    }
    // A burst of megabytes is not kept for the next small delta.
    if scratch.capacity() > SCRATCH_KEEP {
        *scratch = Vec::new();
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

    /// A sink whose writes wait while `gate` is closed.
    struct Gated {
        sink: Shared,
        gate: Arc<(Mutex<bool>, std::sync::Condvar)>,
    }

    impl Write for Gated {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (open, opened) = &*self.gate;
            let mut open = open.lock().map_err(|_| std::io::ErrorKind::Other)?;
            while !*open {
                open = opened.wait(open).map_err(|_| std::io::ErrorKind::Other)?;
            }
            drop(open);
            self.sink.write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn delta(index: u32, text: &str) -> SessionDeltaParams {
        SessionDeltaParams {
            session_id: "s".into(),
            turn: 1,
            step: 1,
            attempt: None,
            kind: crate::methods::DeltaKind::Text,
            index,
            call_id: None,
            delta: text.into(),
        }
    }

    fn written(sink: &Shared) -> Vec<serde_json::Value> {
        let bytes = sink.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8(bytes)
            .unwrap_or_default()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap_or_default())
            .collect()
    }

    #[test]
    fn deltas_behind_a_blocked_client_are_joined_and_precede_the_next_frame() {
        let sink = Shared::default();
        let gate = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        let out = Gated {
            sink: sink.clone(),
            gate: Arc::clone(&gate),
        };
        let (writer, handle) = FrameWriter::spawn(out).unwrap();
        // The client reads nothing: the first frame blocks the writer.
        writer.send(Outgoing::error(&RequestId::Num(1.into()), "first"));
        for i in 0..1000 {
            writer.send_delta(delta(i % 2, &format!("{i},")));
        }
        // Nothing is queued per delta: two streams, two entries.
        let waiting = writer.lane.lock().map(|l| l.entries.len()).unwrap_or(0);
        assert_eq!(waiting, 2);
        writer.send(Outgoing::error(&RequestId::Num(2.into()), "after"));
        {
            let (open, opened) = &*gate;
            *open.lock().unwrap() = true;
            opened.notify_all();
        }
        writer.flush();
        drop(writer);
        let _ = handle.join();
        let frames = written(&sink);
        let methods: Vec<_> = frames
            .iter()
            .map(|f| f["method"].as_str().unwrap_or("response").to_owned())
            .collect();
        let delta = crate::methods::SESSION_DELTA;
        assert_eq!(methods, ["response", delta, delta, "response"]);
        for (frame, parity) in frames[1..3].iter().zip([0, 1]) {
            let expected: String = (0..1000)
                .filter(|i| i % 2 == parity)
                .map(|i| format!("{i},"))
                .collect();
            assert_eq!(frame["params"]["delta"], expected.as_str());
            assert_eq!(frame["params"]["index"], parity);
        }
    }

    #[test]
    fn the_backlog_is_bounded() {
        let mut lane = Lane::default();
        let chunk = "x".repeat(1 << 20);
        for _ in 0..(DELTA_BACKLOG_MAX >> 20) {
            lane.push(delta(0, &chunk));
        }
        assert_eq!((lane.bytes, lane.dropped), (DELTA_BACKLOG_MAX, 0));
        lane.push(delta(0, "y"));
        assert_eq!((lane.bytes, lane.dropped), (DELTA_BACKLOG_MAX, 1));
        assert_eq!(lane.entries.len(), 1);
    }

    #[test]
    fn a_lone_delta_goes_out_when_its_window_closes() {
        let sink = Shared::default();
        let (writer, _handle) = FrameWriter::spawn(sink.clone()).unwrap();
        writer.send_delta(delta(0, "a"));
        let deadline = Instant::now() + Duration::from_secs(10);
        while written(&sink).is_empty() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(2));
        }
        assert_eq!(written(&sink)[0]["params"]["delta"], "a");
    }
}
