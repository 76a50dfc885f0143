//! `session/events` (dsh's extension): a page of a session's stored events
//! after a seq, for a session open in this process (its log flushed first)
//! or one only on disk, written by dsh or by the official runtime.

use crate::error::RpcError;
use crate::server::Server;
use dsh_protocol::JsonObject;
use dsh_protocol::catalog::SessionEvent;
use dsh_protocol::methods::{EVENTS_PAGE_MAX, EventsParams, EventsResult};
use dsh_session::store::{SessionReader, SessionStore};
use serde_json::value::RawValue;

/// Most bytes of event data one page holds (past it the page ends, always
/// with at least one event).
const PAGE_MAX_BYTES: usize = 16 << 20;

/// `session/events`: the events after `afterSeq`, read off the request
/// loop. The log is streamed: only the page is held, however long it is.
pub async fn events(server: &Server, params: JsonObject) -> Result<EventsResult, RpcError> {
    server.initialized()?;
    let EventsParams {
        session_id,
        after_seq,
        limit,
    } = EventsParams::validate(params)?;
    if let Some(agent) = server.session(&session_id) {
        // Everything recorded so far is in the file.
        agent.flush();
    }
    let store = server.store().clone();
    let limit = limit.unwrap_or(EVENTS_PAGE_MAX);
    tokio::task::spawn_blocking(move || page(&store, &session_id, after_seq, limit))
        .await
        .map_err(|err| RpcError::Internal(err.to_string()))?
}

/// Reads the page (blocking).
fn page(
    store: &SessionStore,
    id: &str,
    after_seq: Option<u64>,
    limit: usize,
) -> Result<EventsResult, RpcError> {
    let location = store
        .locate(id)?
        .ok_or_else(|| RpcError::NotFound(id.to_owned()))?;
    let mut events: Vec<SessionEvent> = Vec::new();
    let mut bytes = 0usize;
    let mut more = false;
    let mut failed = None;
    let log = SessionReader::read_each::<Box<RawValue>>(&location, |event| {
        if after_seq.is_some_and(|after| event.seq <= after) || failed.is_some() {
            return;
        }
        let size = event.data.get().len();
        if events.len() == limit || (!events.is_empty() && bytes + size > PAGE_MAX_BYTES) {
            more = true;
            return;
        }
        match serde_json::from_str(event.data.get()) {
            Ok(data) => {
                bytes += size;
                events.push(SessionEvent {
                    kind: event.kind,
                    seq: event.seq,
                    time: event.time,
                    data,
                    source_event_seqs: event.source_event_seqs,
                    surface_op: event.surface_op,
                    ignorable: event.ignorable,
                });
            }
            Err(err) => failed = Some(err.to_string()),
        }
    })?;
    if let Some(err) = failed {
        return Err(RpcError::Internal(format!(
            "an event of {id} cannot be read: {err}"
        )));
    }
    Ok(EventsResult {
        events,
        more,
        last_seq: log.next_seq.checked_sub(1),
    })
}
