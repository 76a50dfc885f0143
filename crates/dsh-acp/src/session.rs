//! One ACP session: its settings, its in-process SDK server, the prompts
//! waiting for their turn to end, and the task that turns the server's
//! notifications into `session/update`s.
//!
//! A prompt is answered when the session goes idle after the turn that
//! took it in: the SDK server splices the prompt (its message id) into the
//! agent's inbox, runs turns until nothing is left, then reports `idle`.
//! The stop reason is how the last of those turns ended.

use crate::editor::{ClientFiles, FsCapabilities};
use crate::error::AcpError;
use crate::host::{Host, HostSpec};
use crate::options::Settings;
use crate::permission::{AskedGate, Asker, Rejections};
use crate::updates::{self, Announced, Translator};
use agent_client_protocol::Client;
use agent_client_protocol::v1::ConnectionTo;
use dsh_client::Notification;
use dsh_protocol::catalog::{AbortReason, Event, SessionEvent, TurnEndReason};
use dsh_protocol::methods::{SESSION_DELTA, SessionDeltaParams};
use dsh_protocol::notifications::{SESSION_EVENT, SESSION_STATUS};
use dsh_server::ServerConfig;
use dsh_tools::EditorFiles;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot};

/// How a prompt ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The ACP stop reason (`end_turn`, `cancelled`, `max_tokens`).
    Stopped(&'static str),
    /// The turn failed: the model's error, as the SDK reports it.
    Failed(String),
}

impl Outcome {
    fn of(end: Option<TurnEndReason>) -> Self {
        match end {
            // A hook refused the prompt or stopped the agent.
            Some(
                TurnEndReason::Blocked
                | TurnEndReason::Aborted {
                    reason: AbortReason::Hook { .. },
                },
            ) => Self::Stopped("refusal"),
            Some(TurnEndReason::Aborted { .. } | TurnEndReason::Interrupted) => {
                Self::Stopped("cancelled")
            }
            Some(TurnEndReason::MaxTokens) => Self::Stopped("max_tokens"),
            Some(TurnEndReason::Error { error }) => Self::Failed(error.message),
            Some(TurnEndReason::Completed | TurnEndReason::Other) | None => {
                Self::Stopped("end_turn")
            }
        }
    }
}

/// Prompts between their receipt and the idle that ends them.
#[derive(Default)]
struct Prompts {
    /// Message ids spliced into the inbox, whose turn has not ended.
    started: Vec<String>,
    /// Outcomes of prompts whose waiter has not come yet.
    finished: HashMap<String, Outcome>,
    /// Waiters by message id.
    waiters: HashMap<String, oneshot::Sender<Outcome>>,
}

impl Prompts {
    fn settle(&mut self, id: String, outcome: Outcome) {
        match self.waiters.remove(&id) {
            Some(waiter) => {
                let _ = waiter.send(outcome);
            }
            None => {
                self.finished.insert(id, outcome);
            }
        }
    }
}

/// The session's server and what it was started with.
struct Running {
    host: Option<Host>,
    /// The settings the host runs with.
    settings: Settings,
    /// Whether the session exists in the store (it was prompted or
    /// resumed), so that a new host must resume it.
    stored: bool,
}

/// One ACP session.
pub struct AcpSession {
    id: String,
    cwd: PathBuf,
    base: Arc<ServerConfig>,
    connection: ConnectionTo<Client>,
    mcp_servers: Vec<Value>,
    /// The client's editor, when file tools go through it.
    editor: Option<Arc<dyn EditorFiles>>,
    rejections: Arc<Rejections>,
    /// Tool calls already shown to the client.
    announced: Announced,
    /// Approvals whose event the update task has passed on.
    gate: Arc<AskedGate>,
    prompts: Arc<Mutex<Prompts>>,
    /// The settings wanted from the next prompt on.
    wanted: Mutex<Settings>,
    /// Whether a prompt is being answered (one at a time, as the official
    /// profile has it).
    in_flight: AtomicBool,
    running: tokio::sync::Mutex<Running>,
}

/// What a session is opened with.
pub struct SessionSpec {
    /// The session id.
    pub id: String,
    /// Its workspace.
    pub cwd: PathBuf,
    /// Route and mode.
    pub settings: Settings,
    /// MCP servers, in the SDK's form.
    pub mcp_servers: Vec<Value>,
    /// What the client offered to do with files.
    pub fs: FsCapabilities,
}

/// How a session's server is opened.
pub enum Open {
    /// A new session.
    New,
    /// A stored session, resumed.
    Resume,
    /// A stored session, resumed and replayed to the client.
    Load,
}

impl AcpSession {
    /// Starts the server of the session `spec` describes and opens the
    /// session as `open` says; `method` names the request in errors.
    pub async fn open(
        spec: SessionSpec,
        base: Arc<ServerConfig>,
        connection: ConnectionTo<Client>,
        open: Open,
        method: &str,
    ) -> Result<Arc<Self>, AcpError> {
        let SessionSpec {
            id,
            cwd,
            settings,
            mcp_servers,
            fs,
        } = spec;
        let editor = ClientFiles::new(connection.clone(), &id, fs)
            .map(|files| Arc::new(files) as Arc<dyn EditorFiles>);
        let session = Arc::new(Self {
            id,
            cwd,
            base,
            connection,
            mcp_servers,
            editor,
            rejections: Arc::default(),
            announced: Announced::default(),
            gate: Arc::default(),
            prompts: Arc::default(),
            wanted: Mutex::new(settings.clone()),
            in_flight: AtomicBool::new(false),
            running: tokio::sync::Mutex::new(Running {
                host: None,
                settings: settings.clone(),
                stored: false,
            }),
        });
        let (host, notifications) = session.start_host(&settings, method).await?;
        let mut skip_through = None;
        if !matches!(open, Open::New) {
            if let Err(err) = host.resume(&session.id).await {
                host.stop().await;
                return Err(err);
            }
            if matches!(open, Open::Load) {
                match session.replay(&host).await {
                    Ok(last) => skip_through = last,
                    Err(err) => {
                        host.stop().await;
                        return Err(err);
                    }
                }
            }
        }
        session.forward(notifications, skip_through);
        let mut running = session.running.lock().await;
        running.host = Some(host);
        running.stored = !matches!(open, Open::New);
        drop(running);
        Ok(session)
    }

    /// The settings the next prompt runs with.
    pub fn settings(&self) -> Settings {
        self.wanted
            .lock()
            .map(|s| s.clone())
            .unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Sets what the next prompt runs with.
    pub fn set_settings(&self, settings: Settings) {
        if let Ok(mut wanted) = self.wanted.lock() {
            *wanted = settings;
        }
    }

    async fn start_host(
        &self,
        settings: &Settings,
        method: &str,
    ) -> Result<(Host, mpsc::UnboundedReceiver<Notification>), AcpError> {
        let spec = HostSpec {
            cwd: &self.cwd,
            settings,
            mcp_servers: &self.mcp_servers,
            method,
            editor: self.editor.clone(),
        };
        let approvals = Asker {
            connection: self.connection.clone(),
            session_id: self.id.clone(),
            rejections: Arc::clone(&self.rejections),
            announced: Arc::clone(&self.announced),
            gate: Arc::clone(&self.gate),
        }
        .handler();
        Host::start(&self.base, spec, approvals).await
    }

    /// Sends the stored session as updates; the seq of its last event.
    async fn replay(&self, host: &Host) -> Result<Option<u64>, AcpError> {
        let mut translator = Translator::replay(self.cwd.clone());
        let mut after = None;
        loop {
            let page = host.events(&self.id, after).await?;
            for event in &page.events {
                for update in translator.event(event) {
                    self.send(update);
                }
                after = Some(event.seq);
            }
            if !page.more || page.events.is_empty() {
                return Ok(page.last_seq.or(after));
            }
        }
    }

    /// Runs a prompt; its outcome once the session is idle again. A
    /// second prompt while one is answered is refused.
    pub async fn prompt(&self, blocks: Vec<Map<String, Value>>) -> Result<Outcome, AcpError> {
        if self.in_flight.swap(true, Ordering::AcqRel) {
            return Err(AcpError::InvalidParams(
                "a prompt is already in flight for this session".into(),
            ));
        }
        let outcome = self.run_prompt(blocks).await;
        self.in_flight.store(false, Ordering::Release);
        outcome
    }

    async fn run_prompt(&self, blocks: Vec<Map<String, Value>>) -> Result<Outcome, AcpError> {
        let mut running = self.running.lock().await;
        let wanted = self.settings();
        let busy = self
            .prompts
            .lock()
            .is_ok_and(|p| !p.started.is_empty() || !p.waiters.is_empty());
        if running.host.is_none() || (wanted != running.settings && !busy) {
            // New settings take a new server: the session is resumed in it.
            // A server that could not be started is started again here.
            if let Some(old) = running.host.take() {
                old.stop().await;
            }
            let (host, notifications) = self.start_host(&wanted, "session/prompt").await?;
            if running.stored
                && let Err(err) = host.resume(&self.id).await
            {
                host.stop().await;
                return Err(err);
            }
            self.forward(notifications, None);
            running.host = Some(host);
            running.settings = wanted;
        }
        let host = running
            .host
            .as_ref()
            .ok_or_else(|| AcpError::Stopped("the session's server is not running".into()))?;
        let message_id = host.prompt(&self.id, blocks).await?;
        running.stored = true;
        let (tx, rx) = oneshot::channel();
        if let Ok(mut prompts) = self.prompts.lock() {
            match prompts.finished.remove(&message_id) {
                Some(outcome) => return Ok(outcome),
                None => {
                    prompts.waiters.insert(message_id, tx);
                }
            }
        }
        drop(running);
        rx.await
            .map_err(|_| AcpError::Stopped("the session's server stopped during the turn".into()))
    }

    /// Stops the running turn (and drops the prompts queued behind it).
    pub async fn cancel(&self) -> Result<(), AcpError> {
        // A prompt holds this lock only until its receipt, not for its turn.
        let host = self.running.lock().await;
        match host.host.as_ref() {
            Some(host) => host.cancel(&self.id).await,
            None => Ok(()),
        }
    }

    /// Stops the session's server; waiting prompts end `cancelled`.
    pub async fn close(&self) {
        let host = self.running.lock().await.host.take();
        if let Some(host) = host {
            host.stop().await;
        }
        if let Ok(mut prompts) = self.prompts.lock() {
            for (_, waiter) in prompts.waiters.drain() {
                let _ = waiter.send(Outcome::Stopped("cancelled"));
            }
            prompts.started.clear();
        }
    }

    /// Sends one update to the client.
    pub fn send(&self, update: Value) {
        updates::send(&self.connection, &self.id, update);
    }

    /// Starts the task that forwards a server's notifications; events up
    /// to seq `skip_through` were replayed already.
    fn forward(
        &self,
        mut notifications: mpsc::UnboundedReceiver<Notification>,
        skip_through: Option<u64>,
    ) {
        let id = self.id.clone();
        let connection = self.connection.clone();
        let prompts = Arc::clone(&self.prompts);
        let mut translator = Translator::live(self.cwd.clone(), Arc::clone(&self.announced));
        let gate = Arc::clone(&self.gate);
        tokio::spawn(async move {
            while let Some(Notification { method, params }) = notifications.recv().await {
                if params["sessionId"] != id.as_str() {
                    continue;
                }
                match method.as_str() {
                    SESSION_EVENT => {
                        let Ok(event) =
                            serde_json::from_value::<SessionEvent>(params["event"].clone())
                        else {
                            continue;
                        };
                        if skip_through.is_some_and(|last| event.seq <= last) {
                            continue;
                        }
                        track_prompts(&prompts, &event);
                        for update in translator.event(&event) {
                            updates::send(&connection, &id, update);
                        }
                        if event.kind == "approval/asked"
                            && let Some(asked) = event.data["id"].as_str()
                        {
                            gate.pass(asked.to_owned());
                        }
                    }
                    SESSION_DELTA => {
                        if let Ok(delta) = serde_json::from_value::<SessionDeltaParams>(params)
                            && let Some(update) = translator.delta(&delta)
                        {
                            updates::send(&connection, &id, update);
                        }
                    }
                    SESSION_STATUS if params["status"] == "idle" => {
                        let outcome = Outcome::of(translator.take_end());
                        if let Ok(mut prompts) = prompts.lock() {
                            for message in std::mem::take(&mut prompts.started) {
                                prompts.settle(message, outcome.clone());
                            }
                        }
                    }
                    _ => {}
                }
            }
        });
    }
}

/// Notes the prompts an inbox event takes in. A prompt queued behind a
/// running turn is taken in at once, so the idle after a cancel (which
/// drops the queue) settles it too.
fn track_prompts(prompts: &Mutex<Prompts>, event: &SessionEvent) {
    let Ok(Event::InboxSpliced(spliced)) = event.typed() else {
        return;
    };
    let Ok(mut prompts) = prompts.lock() else {
        return;
    };
    for message in spliced.inserted {
        if message.source["kind"] == "user" && !prompts.started.contains(&message.id) {
            prompts.started.push(message.id);
        }
    }
}
