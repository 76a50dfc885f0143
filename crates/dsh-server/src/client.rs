//! Requests the runtime sends to its client (`approval/request`, for a
//! client that declared `approvals`) and the routing of the client's
//! responses back to the tool call waiting for them.
//!
//! Every wait ends: with the client's answer, or — when the client closes
//! its input or the runtime shuts down — with an answer that refuses the
//! call. The tool side bounds it with the approval timeout and the turn's
//! cancellation.

use dsh_protocol::methods::{
    APPROVAL_REQUEST, ApprovalDecision, ApprovalRequestParams, ApprovalResponse,
};
use dsh_protocol::{ClientResponse, FrameWriter, Outgoing, RequestId};
use dsh_tools::{ApprovalQuestion, Approver, ApproverAnswer, ApproverFuture};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::oneshot;

/// JSON-RPC's "method not found".
const METHOD_NOT_FOUND: i64 = -32601;

/// The runtime's requests to its client that wait for an answer.
pub(crate) struct ClientChannel {
    writer: FrameWriter,
    next: AtomicU64,
    state: Mutex<Pending>,
}

/// The waiting requests, and whether new ones can still be answered.
#[derive(Default)]
struct Pending {
    waiting: HashMap<String, oneshot::Sender<ApproverAnswer>>,
    /// Set when the client's input ended or the runtime shuts down: the
    /// answer every later request gets at once.
    closed: Option<ApproverAnswer>,
}

impl ClientChannel {
    /// A channel writing its requests to `writer`.
    pub(crate) fn new(writer: FrameWriter) -> Self {
        Self {
            writer,
            next: AtomicU64::new(1),
            state: Mutex::new(Pending::default()),
        }
    }

    fn pending(&self) -> MutexGuard<'_, Pending> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends `approval/request` and waits for its answer.
    fn ask(self: &Arc<Self>, params: ApprovalRequestParams) -> ApproverFuture {
        let id = format!("dsh-approval-{}", self.next.fetch_add(1, Ordering::Relaxed));
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = self.pending();
            if let Some(answer) = pending.closed.clone() {
                return Box::pin(async move { answer });
            }
            pending.waiting.insert(id.clone(), tx);
        }
        match Outgoing::request(&id, APPROVAL_REQUEST, &params) {
            Ok(frame) => self.writer.send(frame),
            Err(err) => {
                self.pending().waiting.remove(&id);
                let answer = ApproverAnswer::Failed(format!("cannot send the request: {err}"));
                return Box::pin(async move { answer });
            }
        }
        let channel = Arc::clone(self);
        Box::pin(async move {
            // A drop of the future (timeout, cancel) forgets the request:
            // a late answer is ignored.
            let guard = Forget {
                channel: &channel,
                id: &id,
            };
            let answer = rx.await.unwrap_or(ApproverAnswer::Cancelled);
            drop(guard);
            answer
        })
    }

    /// Routes a client response; `false` when no request waits for it.
    pub(crate) fn resolve(&self, response: ClientResponse) -> bool {
        let RequestId::Str(id) = &response.id else {
            return false;
        };
        let Some(tx) = self.pending().waiting.remove(id) else {
            return false;
        };
        let _ = tx.send(answer_of(response));
        true
    }

    /// Ends every wait with `answer`, and every later request at once.
    pub(crate) fn close(&self, answer: ApproverAnswer) {
        let waiting = {
            let mut pending = self.pending();
            pending.closed.get_or_insert(answer.clone());
            std::mem::take(&mut pending.waiting)
        };
        for (_, tx) in waiting {
            let _ = tx.send(answer.clone());
        }
    }
}

/// Removes a request that is no longer awaited.
struct Forget<'a> {
    channel: &'a ClientChannel,
    id: &'a str,
}

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        self.channel.pending().waiting.remove(self.id);
    }
}

/// What a client's response says.
fn answer_of(response: ClientResponse) -> ApproverAnswer {
    if let Some(error) = response.error {
        let code = error.get("code").and_then(Value::as_i64);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("no message")
            .to_owned();
        return if code == Some(METHOD_NOT_FOUND) {
            ApproverAnswer::Unavailable(format!(
                "the client does not answer {APPROVAL_REQUEST}: {message}"
            ))
        } else {
            ApproverAnswer::Failed(format!("the client answered with an error: {message}"))
        };
    }
    match response
        .result
        .map(serde_json::from_value::<ApprovalResponse>)
    {
        Some(Ok(ApprovalResponse { decision, message })) => {
            ApproverAnswer::Decided(decision, message)
        }
        Some(Err(err)) => {
            ApproverAnswer::Failed(format!("the client's answer is not a decision: {err}"))
        }
        None => ApproverAnswer::Failed("the client's answer has no result".to_owned()),
    }
}

/// The approver of one root session's tree: questions go to the client
/// with the root's id.
pub(crate) struct RootApprover {
    pub root: String,
    pub channel: Arc<ClientChannel>,
}

impl Approver for RootApprover {
    fn ask(&self, question: ApprovalQuestion) -> ApproverFuture {
        self.channel.ask(ApprovalRequestParams {
            session_id: question.session_id,
            root_session_id: self.root.clone(),
            approval_id: question.approval_id,
            tool_name: question.tool_name,
            call_id: question.call_id,
            arguments: question.arguments,
            reason: question.reason,
            options: ApprovalDecision::ALL.to_vec(),
        })
    }
}
