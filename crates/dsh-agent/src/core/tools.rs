//! Tool dispatch: a name → handler map ([`Roster`]) over the profile's tool
//! library (`dsh-tools`) and the tools features implement ([`AgentTool`]).
//!
//! A feature's tool gets a per-call context ([`ToolCall`]: the agent's
//! core, the call, its directory and cancellation) and answers a
//! [`ToolOutcome`]: the result, plus what the core should do after
//! recording it (deliver a follow-up notice, end the turn after the step).

use super::deltas::OutputDeltas;
use super::hooks::HookFuture;
use super::shared::Core;
use super::state::AgentState;
use crate::estimate;
use dsh_mcp::McpRoster;
use dsh_protocol::catalog::{HeaderReason, ToolEvent, ToolSpec};
use dsh_session::{UserMessage, text_block};
use dsh_tools::{
    CancellationToken, JobNotice, OutputTap, ToolContext, ToolHost, ToolOutput, ToolSet,
};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Weak};

/// One call as a feature's tool receives it.
pub(crate) struct ToolCall<'a> {
    /// The calling agent.
    pub core: &'a Core,
    /// The call's id.
    pub call_id: &'a str,
    /// The tool's name (a handler may answer several).
    pub name: &'a str,
    /// The raw argument text (an empty text means `{}`).
    pub arguments: &'a str,
    /// The session's directory when the call started.
    pub cwd: PathBuf,
    /// Cancelled when the turn is interrupted or the agent disposed.
    pub cancel: &'a CancellationToken,
    /// The turn of the call.
    pub turn: u32,
    /// The step of the call.
    pub step: u32,
}

/// A tool's answer and what follows it.
pub(crate) struct ToolOutcome {
    /// The `tool/result`.
    pub output: ToolOutput,
    /// A notice delivered right after the result is recorded.
    pub follow_up: Option<UserMessage>,
    /// The turn completes once the step that made this call ends.
    pub end_turn: bool,
}

impl From<ToolOutput> for ToolOutcome {
    fn from(output: ToolOutput) -> Self {
        Self {
            output,
            follow_up: None,
            end_turn: false,
        }
    }
}

/// A tool implemented by a feature of the agent (not by the library).
pub(crate) trait AgentTool: Send + Sync {
    /// The specs of the tools this handler answers, one per name.
    fn specs(&self) -> Vec<ToolSpec>;

    /// Whether this call of `name` joins a batch (see
    /// [`dsh_tools::Tool::batched`]).
    fn batched(&self, _name: &str, _arguments: &str) -> bool {
        false
    }

    /// Runs one call.
    fn call<'a>(&'a self, call: ToolCall<'a>) -> HookFuture<'a, ToolOutcome>;
}

/// The tools of an agent: handlers by name over the library, the list
/// advertised to the model and its estimated tokens. Sessions of one
/// profile share one roster (the `sdk` list is ≈35 KiB of JSON schemas).
pub(crate) struct Roster {
    library: Arc<ToolSet>,
    handlers: HashMap<String, Arc<dyn AgentTool>>,
    specs: Arc<Vec<ToolSpec>>,
    tokens: u64,
}

impl Roster {
    /// The library's tools and `tools`, advertised in name order.
    pub fn new(library: Arc<ToolSet>, tools: &[Arc<dyn AgentTool>]) -> Self {
        let mut specs = library.specs();
        let mut handlers = HashMap::new();
        for tool in tools {
            for spec in tool.specs() {
                handlers.insert(spec.name.clone(), Arc::clone(tool));
                specs.push(spec);
            }
        }
        specs.sort_by(|a, b| a.name.cmp(&b.name));
        let json = serde_json::to_string(&specs).map_or(0, |json| json.len());
        Self {
            library,
            handlers,
            specs: Arc::new(specs),
            tokens: estimate::text(json),
        }
    }

    /// This roster with `extra` tools (a child's own).
    pub fn with(&self, extra: &[Arc<dyn AgentTool>]) -> Self {
        let mut tools: Vec<Arc<dyn AgentTool>> = Vec::new();
        for tool in self.handlers.values() {
            if !tools.iter().any(|t| Arc::ptr_eq(t, tool)) {
                tools.push(Arc::clone(tool));
            }
        }
        tools.extend(extra.iter().cloned());
        Self::new(Arc::clone(&self.library), &tools)
    }

    /// What the model is told it may call, in name order.
    pub fn specs(&self) -> &Arc<Vec<ToolSpec>> {
        &self.specs
    }

    /// The estimated tokens of [`Roster::specs`] (sent with every request).
    pub fn tokens(&self) -> u64 {
        self.tokens
    }

    /// The tool library.
    pub fn library(&self) -> &Arc<ToolSet> {
        &self.library
    }

    /// Whether this call joins a batch: a feature's tool says, else the
    /// library's.
    pub fn batched(&self, name: &str, arguments: &str) -> bool {
        match self.handlers.get(name) {
            Some(tool) => tool.batched(name, arguments),
            None => self
                .library
                .get(name)
                .is_some_and(|tool| tool.batched(arguments)),
        }
    }

    /// Runs one call: a feature's tool, else the library's (which answers
    /// an unknown name).
    pub async fn run(&self, call: ToolCall<'_>) -> ToolOutcome {
        if let Some(tool) = self.handlers.get(call.name) {
            return tool.call(call).await;
        }
        let mcp = if call.name.starts_with("mcp__") {
            call.core.state().mcp_roster()
        } else {
            None
        };
        if let Some(mcp) = mcp
            && mcp.names_a_server(call.name)
        {
            let (name, arguments) = (call.name, call.arguments);
            return mcp.call(name, arguments, context(call)).await.into();
        }
        let name = call.name;
        let arguments = call.arguments;
        let ctx = context(call);
        self.library.run(name, arguments, ctx).await.into()
    }
}

/// The context of a call of a tool outside the agent's features.
pub(super) fn context(call: ToolCall<'_>) -> ToolContext {
    let core = call.core;
    ToolContext {
        session_id: core.id.clone(),
        call_id: call.call_id.to_owned(),
        cwd: call.cwd,
        workspace: core.workspace.clone(),
        mode: core.profile.permission_mode,
        host: Arc::clone(&core.tool_host),
        state: Arc::clone(&core.session_tools),
        cancel: call.cancel.child_token(),
        approvals: Arc::clone(&core.approvals),
        output_tap: core.state().log.delta_observer().map(|observer| {
            Arc::new(OutputDeltas::new(
                observer,
                &core.id,
                call.turn,
                call.step,
                call.call_id,
            )) as Arc<dyn OutputTap>
        }),
        editor: core.editor.clone(),
    }
}

impl AgentState {
    /// Takes the MCP tools of the step about to open: when they changed,
    /// the full list is rebuilt (the roster's tools, then the MCP tools)
    /// and, after the first request, a `request/header` (reason `series`)
    /// announces it.
    pub(super) fn set_mcp(&mut self, roster: &Roster, mcp: Option<Arc<McpRoster>>) {
        let Some(mcp) = mcp else {
            return;
        };
        if let Some((current, _)) = &self.mcp
            && Arc::ptr_eq(current, &mcp)
        {
            return;
        }
        let mut specs = Vec::with_capacity(roster.specs().len() + mcp.specs().len());
        specs.extend(roster.specs().iter().cloned());
        specs.extend(mcp.specs().iter().cloned());
        let changed = self
            .mcp
            .as_ref()
            .map_or(!mcp.specs().is_empty(), |(_, before)| **before != specs);
        // A new tool list starts a new series of requests (as a rewritten
        // history does): the official reader knows no other reason.
        if changed {
            self.header_reason.get_or_insert(HeaderReason::Series);
        }
        self.mcp_tokens =
            serde_json::to_string(mcp.specs()).map_or(0, |json| estimate::text(json.len()));
        self.mcp = Some((mcp, Arc::new(specs)));
    }

    /// Estimated tokens sent with every request besides the history: the
    /// system prompt, the roster's tools and the MCP tools of the last
    /// step.
    pub(crate) fn fixed_tokens(&self, core: &Core) -> u64 {
        core.fixed_tokens + self.mcp_tokens
    }

    /// Every tool the model is told of at this step.
    pub(super) fn tool_specs(&self, roster: &Roster) -> Arc<Vec<ToolSpec>> {
        match &self.mcp {
            Some((_, specs)) => Arc::clone(specs),
            None => Arc::clone(roster.specs()),
        }
    }

    /// The MCP roster of this step.
    pub(super) fn mcp_roster(&self) -> Option<Arc<McpRoster>> {
        self.mcp.as_ref().map(|(roster, _)| Arc::clone(roster))
    }
}

/// The [`ToolHost`] of one agent: library tools append their events
/// (`job/*`, `todo/write`, `approval/*`) to its log, and a finished
/// background job's notice to its inbox.
pub(crate) struct AgentToolHost(pub Weak<Core>);

/// Source kind of a background job's notice.
const TOOL_JOBS: &str = "tool-jobs";

impl ToolHost for AgentToolHost {
    fn emit(&self, event: ToolEvent) {
        if let Some(core) = self.0.upgrade() {
            core.state().event(event);
        }
    }

    fn asking_client(&self, tool: &str, reason: &str) {
        if let Some(core) = self.0.upgrade() {
            for feature in core.hooks.iter() {
                feature.approval_asked(&core, tool, reason);
            }
        }
    }

    fn job_notice(&self, notice: JobNotice) {
        if let Some(core) = self.0.upgrade() {
            let message = UserMessage::inbox_notice(
                TOOL_JOBS,
                vec![text_block(notice.text)],
                &notice.summary,
                None,
            );
            core.deliver(message, super::state::Delivery::Notice, None);
        }
    }
}
