//! The SDK server's `approval/request` put to the ACP client as
//! `session/request_permission`.
//!
//! | ACP option | SDK decision |
//! |---|---|
//! | `allow_once` | `allow-once` |
//! | `allow_always` | `allow-session` (later calls of the tool asking for the same access run) |
//! | `reject_once` | `reject` |
//! | `reject_always` | `reject`, and later such calls of this session are refused without asking |
//!
//! A `cancelled` outcome, an error answer or an answer that is not one of
//! the options refuses the call: nothing but an allow runs it.

use crate::tools;
use crate::updates::{self, Announced};
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::v1::schema::{RequestPermissionRequest, RequestPermissionResponse};
use dsh_client::ApprovalHandler;
use dsh_protocol::methods::{ApprovalDecision, ApprovalRequestParams, ApprovalResponse};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// What a call asks for: the tool and the sandbox mode it wants.
type Access = (String, String);

/// The accesses a session's user chose to always reject.
#[derive(Default)]
pub struct Rejections(Mutex<HashSet<Access>>);

/// The approvals whose `approval/asked` event the session's update task
/// has passed on. The SDK server records that event before it sends
/// `approval/request`, but the two reach this front end on different
/// paths (the event through the ordered update task, the request on a
/// task of its own): a permission request waits for its event, so every
/// update before it (the calls of earlier steps) reaches the client first.
#[derive(Default)]
pub struct AskedGate {
    seen: Mutex<HashSet<String>>,
    passed: tokio::sync::Notify,
}

/// Approvals remembered at most.
const GATE_MAX: usize = 4096;

/// How long a permission request waits for its event (a subagent's never
/// comes through the session's update task).
const GATE_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

impl AskedGate {
    /// Notes that approval `id`'s event was passed on.
    pub fn pass(&self, id: String) {
        if let Ok(mut seen) = self.seen.lock() {
            // Approvals decided without the client (rules, grants) are
            // never waited for; the set stays bounded.
            if seen.len() >= GATE_MAX {
                seen.clear();
            }
            seen.insert(id);
        }
        self.passed.notify_waiters();
    }

    /// Waits until approval `id`'s event was passed on, at most
    /// [`GATE_WAIT`].
    async fn wait(&self, id: &str) {
        let deadline = tokio::time::Instant::now() + GATE_WAIT;
        loop {
            let passed = self.passed.notified();
            if self.seen.lock().is_ok_and(|mut seen| seen.remove(id)) {
                return;
            }
            if tokio::time::timeout_at(deadline, passed).await.is_err() {
                return;
            }
        }
    }
}

/// The options offered: id, name, kind.
const OPTIONS: [(&str, &str, &str); 4] = [
    ("allow-once", "Allow once", "allow_once"),
    ("allow-always", "Always allow", "allow_always"),
    ("reject-once", "Reject", "reject_once"),
    ("reject-always", "Always reject", "reject_always"),
];

/// What asks the client of one ACP session.
pub struct Asker {
    /// The connection to the client.
    pub connection: ConnectionTo<Client>,
    /// The ACP session.
    pub session_id: String,
    /// The accesses its user chose to always reject.
    pub rejections: Arc<Rejections>,
    /// The calls already shown to the client.
    pub announced: Announced,
    /// The approvals whose event was passed on.
    pub gate: Arc<AskedGate>,
}

impl Asker {
    /// The SDK client's approval handler that asks through this.
    pub fn handler(self) -> ApprovalHandler {
        let asker = Arc::new(self);
        Arc::new(move |params: ApprovalRequestParams| {
            let asker = Arc::clone(&asker);
            Box::pin(async move { asker.ask(params).await })
        })
    }

    async fn ask(&self, params: ApprovalRequestParams) -> ApprovalResponse {
        let Self {
            connection,
            session_id,
            rejections,
            announced,
            gate,
        } = self;
        if params.session_id == params.root_session_id {
            gate.wait(&params.approval_id).await;
        }
        let access: Access = (
            params.tool_name.clone(),
            params.arguments["sandbox_permissions"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
        if rejections.0.lock().is_ok_and(|set| set.contains(&access)) {
            return reject("the user chose to always reject this");
        }
        let request = match permission_request(session_id, &params) {
            Ok(request) => request,
            Err(err) => return reject(&format!("cannot ask the client: {err}")),
        };
        // The call waits for the client: `pending` until it is answered, shown
        // before the request on the same connection (so it is seen first): a
        // `tool_call` if its event has not shown it yet, else an update. A
        // subagent's call is not shown in the session.
        if params.session_id == params.root_session_id {
            let first = announced
                .lock()
                .is_ok_and(|mut set| set.insert(params.call_id.clone()));
            let update = if first {
                json!({
                    "sessionUpdate": "tool_call",
                    "toolCallId": params.call_id,
                    "title": tools::title(&params.tool_name, &params.arguments),
                    "kind": tools::kind(&params.tool_name),
                    "status": "pending",
                    "rawInput": params.arguments,
                })
            } else {
                updates::status_update(&params.call_id, "pending")
            };
            updates::send(connection, session_id, update);
        }
        let answer = connection.send_request(request).block_task().await;
        let chosen = match answer {
            Ok(response) => chosen_option(&response),
            Err(err) => {
                return reject(&format!(
                    "the client answered with an error: {}",
                    err.message
                ));
            }
        };
        match chosen.as_deref() {
            Some("allow-once") => allow(ApprovalDecision::AllowOnce),
            Some("allow-always") => allow(ApprovalDecision::AllowSession),
            Some("reject-once") => reject("the user rejected it"),
            Some("reject-always") => {
                if let Ok(mut set) = rejections.0.lock() {
                    set.insert(access);
                }
                reject("the user rejected it")
            }
            Some(other) => reject(&format!(
                "the client chose an option that was not offered: {other}"
            )),
            None => reject("the request was cancelled"),
        }
    }
}

/// The request for `params`' call.
fn permission_request(
    session_id: &str,
    params: &ApprovalRequestParams,
) -> Result<RequestPermissionRequest, serde_json::Error> {
    let options: Vec<Value> = OPTIONS
        .iter()
        .map(|(id, name, kind)| json!({"optionId": id, "name": name, "kind": kind}))
        .collect();
    serde_json::from_value(json!({
        "sessionId": session_id,
        "toolCall": {
            "toolCallId": params.call_id,
            "title": tools::title(&params.tool_name, &params.arguments),
            "kind": tools::kind(&params.tool_name),
            "status": "pending",
            "rawInput": params.arguments,
            "content": [{"type": "content", "content": {"type": "text", "text": params.reason}}],
        },
        "options": options,
    }))
}

/// The option id the client selected; `None` when it cancelled.
fn chosen_option(response: &RequestPermissionResponse) -> Option<String> {
    let value = serde_json::to_value(response).ok()?;
    let outcome = &value["outcome"];
    (outcome["outcome"] == "selected")
        .then(|| outcome["optionId"].as_str().map(str::to_owned))
        .flatten()
}

fn allow(decision: ApprovalDecision) -> ApprovalResponse {
    ApprovalResponse {
        decision,
        message: None,
    }
}

fn reject(message: &str) -> ApprovalResponse {
    ApprovalResponse {
        decision: ApprovalDecision::Reject,
        message: Some(message.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(outcome: Value) -> RequestPermissionResponse {
        serde_json::from_value(json!({"outcome": outcome})).unwrap()
    }

    #[test]
    fn outcomes_name_the_option_or_nothing() {
        let selected = response(json!({"outcome": "selected", "optionId": "allow-once"}));
        assert_eq!(chosen_option(&selected).as_deref(), Some("allow-once"));
        assert_eq!(
            chosen_option(&response(json!({"outcome": "cancelled"}))),
            None
        );
    }

    #[test]
    fn the_request_offers_four_options_for_the_call() {
        let params: ApprovalRequestParams = serde_json::from_value(json!({
            "sessionId": "s", "rootSessionId": "s", "approvalId": "a1", "toolName": "write",
            "callId": "c1", "arguments": {"file_path": "/etc/x", "sandbox_permissions": "danger-full-access"},
            "reason": "write outside", "options": ["allow-once", "allow-session", "reject"]
        }))
        .unwrap();
        let request = serde_json::to_value(permission_request("s", &params).unwrap()).unwrap();
        assert_eq!(request["toolCall"]["title"], "Write /etc/x");
        assert_eq!(request["options"].as_array().unwrap().len(), 4);
        assert_eq!(request["options"][3]["kind"], "reject_always");
    }
}
