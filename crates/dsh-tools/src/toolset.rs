//! The [`Tool`] trait and the [`ToolSet`] a profile exposes to the model.

use crate::{ToolContext, ToolOutput, unknown_tool};
use dsh_protocol::catalog::ToolSpec;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// The future a tool call returns.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = ToolOutput> + Send + 'a>>;

/// One model-visible tool.
pub trait Tool: Send + Sync {
    /// Name, description and parameter schema as advertised to the model.
    fn spec(&self) -> &ToolSpec;

    /// Whether this call joins a batch: consecutive batched calls of a
    /// step have all their `tool/call`s recorded before any runs and their
    /// results after all ran (the official runtime runs them in parallel).
    /// Calls of the reading tools (`read`, `read_image`, `web_fetch`,
    /// `web_search`) whose arguments fit the schema; a call the schema
    /// refuses stands alone, as officially.
    fn batched(&self, arguments: &str) -> bool;

    /// Runs one call. `arguments` is the raw JSON string as streamed by the
    /// model; invalid or ill-typed arguments yield an error result, never a
    /// panic.
    fn run(&self, arguments: &str, ctx: ToolContext) -> ToolFuture<'_>;
}

/// A set of tools keyed by name.
#[derive(Clone, Default)]
pub struct ToolSet {
    tools: BTreeMap<String, Arc<dyn Tool>>,
}

impl ToolSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tool`, replacing any tool of the same name.
    pub fn insert(&mut self, tool: Arc<dyn Tool>) {
        self.tools.insert(tool.spec().name.clone(), tool);
    }

    /// Removes the tool called `name`, returning it.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.remove(name)
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.tools.get(name)
    }

    /// Whether a tool called `name` exists.
    pub fn contains(&self, name: &str) -> bool {
        self.tools.contains_key(name)
    }

    /// Tool names in alphabetical order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.keys().map(String::as_str).collect()
    }

    /// The specs of every tool, in alphabetical order of name.
    pub fn specs(&self) -> Vec<ToolSpec> {
        self.tools
            .values()
            .map(|tool| tool.spec().clone())
            .collect()
    }

    /// Number of tools.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }

    /// Runs a call of tool `name`; an unknown name gets [`unknown_tool`].
    pub async fn run(&self, name: &str, arguments: &str, ctx: ToolContext) -> ToolOutput {
        match self.get(name) {
            Some(tool) => tool.run(arguments, ctx).await,
            None => unknown_tool(name),
        }
    }
}

impl std::fmt::Debug for ToolSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}
