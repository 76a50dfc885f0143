//! The observer that turns sessions' events, status transitions and live
//! notices into notifications.

use dsh_protocol::methods::{SESSION_USAGE_NOTIFICATION, SessionDeltaParams};
use dsh_protocol::notifications::{
    SESSION_STATUS, SUBAGENT_FINISHED, SUBAGENT_STARTED, SessionStatusParams, Status,
};
use dsh_protocol::{FrameWriter, Outgoing};
use dsh_session::{EventBytes, EventObserver, LiveNotice, SessionStatus, TreeNotice};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// The optional notifications the client declared in `initialize`'s
/// `clientCapabilities` (the last `initialize` decides).
#[derive(Debug, Default)]
pub struct Wants {
    /// `session.usage`.
    pub usage: AtomicBool,
    /// `session.delta`.
    pub deltas: AtomicBool,
}

/// Turns session events and status transitions into notifications, until
/// muted (shutdown unsubscribes every listener before disposing agents).
pub struct Publisher {
    writer: FrameWriter,
    muted: Arc<AtomicBool>,
    wants: Arc<Wants>,
}

impl Publisher {
    /// A publisher writing to `writer` while `muted` is false; the
    /// optional notifications only as `wants` says.
    pub fn new(writer: FrameWriter, muted: Arc<AtomicBool>, wants: Arc<Wants>) -> Self {
        Self {
            writer,
            muted,
            wants,
        }
    }

    fn live(&self) -> bool {
        !self.muted.load(Ordering::SeqCst)
    }
}

impl EventObserver for Publisher {
    fn on_event(&self, session_id: &str, event: &EventBytes) {
        if self.live() {
            // The frame shares the event's bytes with the log: no copy.
            self.writer
                .send(Outgoing::session_event(session_id, event.shared()));
        }
    }

    fn on_status(&self, session_id: &str, status: SessionStatus) {
        if !self.live() {
            return;
        }
        let status = match status {
            SessionStatus::Running => Status::Running,
            SessionStatus::Idle => Status::Idle,
        };
        let params = SessionStatusParams {
            session_id: session_id.to_owned(),
            status,
        };
        match Outgoing::notification(SESSION_STATUS, &params) {
            Ok(frame) => self.writer.send(frame),
            Err(err) => tracing::error!("session.status not sent: {err}"),
        }
    }

    fn on_live(&self, _session_id: &str, notice: &LiveNotice) {
        if !self.live() {
            return;
        }
        let frame = match notice {
            LiveNotice::Usage(params) => {
                if !self.wants.usage.load(Ordering::Relaxed) {
                    return;
                }
                Outgoing::notification(SESSION_USAGE_NOTIFICATION, params)
            }
        };
        match frame {
            Ok(frame) => self.writer.send(frame),
            Err(err) => tracing::error!("live notification not sent: {err}"),
        }
    }

    fn wants_deltas(&self) -> bool {
        self.live() && self.wants.deltas.load(Ordering::Relaxed)
    }

    fn on_delta(&self, delta: SessionDeltaParams) {
        if self.live() {
            self.writer.send_delta(delta);
        }
    }

    fn on_tree(&self, notice: &TreeNotice) {
        if !self.live() {
            return;
        }
        let frame = match notice {
            TreeNotice::Started(params) => Outgoing::notification(SUBAGENT_STARTED, params),
            TreeNotice::Finished(params) => Outgoing::notification(SUBAGENT_FINISHED, params),
        };
        match frame {
            Ok(frame) => self.writer.send(frame),
            Err(err) => tracing::error!("subagent notification not sent: {err}"),
        }
    }
}
