//! `session/events` and `session/usage` (dsh's extensions): a page of a
//! session's stored events after a seq, and its usage summed from its
//! log, for a session open in this process (its log flushed first) or one
//! only on disk, written by dsh or by the official runtime.

use crate::error::RpcError;
use crate::server::Server;
use dsh_protocol::JsonObject;
use dsh_protocol::catalog::SessionEvent;
use dsh_protocol::catalog::{AssistantMessageEvent, EventKind, SessionEndSeed, Usage};
use dsh_protocol::methods::{
    ContextUsage, EVENTS_PAGE_MAX, EventsParams, EventsResult, PriceTable, TokenCounts, TurnUsage,
    UsageLedger, UsageParams, UsageResult,
};
use dsh_session::store::{SessionReader, SessionStore};
use serde_json::value::RawValue;

/// `assistant/message`.
const ASSISTANT_MESSAGE: &str = <AssistantMessageEvent as EventKind>::KIND;
/// `session/end-seed`.
const SESSION_END_SEED: &str = <SessionEndSeed as EventKind>::KIND;

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

/// `session/usage`: a session's token counts and cost per turn and per
/// model, summed from its log's `assistant/message.usage` (streamed; a
/// fork's inherited replies are left out), priced with the prices of the
/// last `initialize`.
pub async fn usage(server: &Server, params: JsonObject) -> Result<UsageResult, RpcError> {
    let init = server.initialized()?;
    let UsageParams { session_id } = UsageParams::validate(params)?;
    let window = init.route.model_info().context_window;
    if let Some(agent) = server.session(&session_id) {
        agent.flush();
    }
    let store = server.store().clone();
    tokio::task::spawn_blocking(move || tally(&store, &session_id, &init.prices, window))
        .await
        .map_err(|err| RpcError::Internal(err.to_string()))?
}

/// What `session/usage` reads of an `assistant/message` (its `stream`,
/// most of its bytes, is skipped).
#[derive(serde::Deserialize)]
struct Reply {
    turn: u64,
    message: ReplyMessage,
    #[serde(default)]
    usage: Option<Usage>,
}

/// The model a reply names.
#[derive(serde::Deserialize)]
struct ReplyMessage {
    source: ReplySource,
}

/// `message.source` of a reply.
#[derive(serde::Deserialize)]
struct ReplySource {
    #[serde(default)]
    model: Option<String>,
}

/// Sums the usage of `id`'s log (blocking).
fn tally(
    store: &SessionStore,
    id: &str,
    prices: &PriceTable,
    window: u64,
) -> Result<UsageResult, RpcError> {
    let location = store
        .locate(id)?
        .ok_or_else(|| RpcError::NotFound(id.to_owned()))?;
    let mut total = UsageLedger::default();
    let mut turns: Vec<(u64, UsageLedger)> = Vec::new();
    let mut last = None;
    let mut failed = None;
    SessionReader::read_each::<Box<RawValue>>(&location, |event| {
        if failed.is_some() {
            return;
        }
        if event.kind == SESSION_END_SEED {
            // A fork's inherited replies are its parent's.
            let seed = serde_json::from_str::<SessionEndSeed>(event.data.get());
            if seed.is_ok_and(|seed| seed.inherited == Some(true)) {
                total = UsageLedger::default();
                turns.clear();
                last = None;
            }
            return;
        }
        if event.kind != ASSISTANT_MESSAGE {
            return;
        }
        let reply: Reply = match serde_json::from_str(event.data.get()) {
            Ok(reply) => reply,
            Err(err) => {
                failed = Some(format!("event {}: {err}", event.seq));
                return;
            }
        };
        let Some(usage) = reply.usage else { return };
        let counts = TokenCounts::of(&usage);
        let model = reply.message.source.model.as_deref().unwrap_or("unknown");
        total.record(model, &counts);
        match turns.last_mut() {
            Some((turn, ledger)) if *turn == reply.turn => ledger.record(model, &counts),
            _ => {
                let mut ledger = UsageLedger::default();
                ledger.record(model, &counts);
                turns.push((reply.turn, ledger));
            }
        }
        last = Some(counts);
    })?;
    if let Some(err) = failed {
        return Err(RpcError::Internal(format!(
            "the usage of {id} cannot be read: {err}"
        )));
    }
    let by_model = total
        .by_model
        .iter()
        .map(|(model, counts)| {
            let mut one = UsageLedger::default();
            one.record(model, counts);
            (model.clone(), one.figures(prices))
        })
        .collect();
    Ok(UsageResult {
        session_id: id.to_owned(),
        total: total.figures(prices),
        by_model,
        turns: turns
            .into_iter()
            .map(|(turn, ledger)| TurnUsage {
                turn,
                figures: ledger.figures(prices),
            })
            .collect(),
        context: last.map(|counts| ContextUsage::new(&counts, window)),
    })
}
