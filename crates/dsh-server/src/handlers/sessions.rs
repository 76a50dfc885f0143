//! `session/list` and `session/fork` (dsh's extensions): the stored
//! sessions a page at a time, and a new session from a stored one's
//! completed turns. Both read the store off the request loop.

use crate::error::RpcError;
use crate::server::Server;
use dsh_protocol::JsonObject;
use dsh_protocol::methods::{
    ForkOrigin, ForkParams, ForkResult, LIST_PAGE_DEFAULT, ListCursor, ListParams, ListResult,
    SessionActivity, SessionInfo,
};
use dsh_session::now_ms;
use dsh_session::store::{ForkRequest, ListKey, ListQuery, ListedSession};
use std::collections::HashSet;

/// `session/list`: a page of the sessions stored in `DSH_HOME`, newest
/// activity first. A session is `running` when it is open in this process
/// or another runtime holds its lock (only the page's sessions are probed).
pub async fn list(server: &Server, params: JsonObject) -> Result<ListResult, RpcError> {
    server.initialized()?;
    let (params, cursor) = ListParams::validate(params)?;
    let query = ListQuery {
        cwd: params.cwd,
        query: params.query,
        after: cursor.map(|cursor| ListKey {
            updated_at: cursor.updated_at,
            session_id: cursor.session_id,
        }),
        limit: params.limit.unwrap_or(LIST_PAGE_DEFAULT),
    };
    let open: HashSet<String> = server.registry().sessions.keys().cloned().collect();
    let store = server.store().clone();
    tokio::task::spawn_blocking(move || {
        let page = store.list_sessions(&query)?;
        let next_cursor = page.next.map(|key| {
            ListCursor {
                updated_at: key.updated_at,
                session_id: key.session_id,
            }
            .encode()
        });
        let sessions = page
            .sessions
            .into_iter()
            .map(|listed| info(listed, &open))
            .collect();
        Ok(ListResult {
            sessions,
            next_cursor,
        })
    })
    .await
    .map_err(|err| RpcError::Internal(err.to_string()))?
}

/// A listed session as the page shows it.
fn info(listed: ListedSession, open: &HashSet<String>) -> SessionInfo {
    let running = open.contains(&listed.summary.id) || listed.is_locked();
    let summary = listed.summary;
    SessionInfo {
        session_id: summary.id,
        title: summary.title,
        cwd: summary.cwd,
        created_at: summary.created_at,
        updated_at: summary.updated_at,
        turns: summary.turns,
        status: if running {
            SessionActivity::Running
        } else {
            SessionActivity::Idle
        },
        parent_session_id: summary.parent_session_id,
        forked_from: summary.forked_from.map(|source| ForkOrigin {
            session_id: source.session_id,
            seq: source.seq,
        }),
    }
}

/// `session/fork`: a new root session holding the source's events through
/// the last turn that ended at or before `atSeq` (see
/// [`dsh_session::store::SessionStore::fork_session`]). A source open in
/// this process has its log flushed first; the source is never changed.
pub async fn fork(server: &Server, params: JsonObject) -> Result<ForkResult, RpcError> {
    server.initialized()?;
    let ForkParams {
        session_id,
        at_seq,
        new_session_id,
    } = ForkParams::validate(params)?;
    if let Some(agent) = server.session(&session_id) {
        agent.flush();
    }
    let request = ForkRequest {
        source: session_id,
        at_seq,
        new_id: new_session_id,
        encoding: server.inner().config.encoding,
        now: now_ms(),
    };
    let store = server.store().clone();
    let forked = tokio::task::spawn_blocking(move || store.fork_session(&request))
        .await
        .map_err(|err| RpcError::Internal(err.to_string()))??;
    Ok(ForkResult {
        session_id: forked.session_id,
        forked_from_seq: forked.forked_from_seq,
        turns: forked.turns,
    })
}
