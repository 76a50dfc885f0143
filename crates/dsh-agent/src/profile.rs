use crate::prose;
pub use dsh_tools::PermissionMode;

/// Approval policy for requests that need a human decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalPolicy {
    /// Ask (fails closed while no client answers approvals).
    Ask,
    /// Never ask.
    Never,
}

impl ApprovalPolicy {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Never => "never",
        }
    }
}

/// Which built-in profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileKind {
    /// `sdk`: policy events, full runtime context, rich system prompt.
    Sdk,
    /// `sdk-minimal`: no policy events, working directory context only.
    SdkMinimal,
}

/// The behaviour a profile gives every agent of the process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Which profile.
    pub kind: ProfileKind,
    /// File-system mode.
    pub permission_mode: PermissionMode,
    /// Approval policy.
    pub approval: ApprovalPolicy,
    /// Explicit system prompt (sdk-minimal's `DSH_SYSTEM_PROMPT`).
    pub system_prompt_override: Option<String>,
    /// Whether a child cut at its token cap finished `ok` (`sdk`: true,
    /// `$DSH_MAX_TOKENS_AS_SUCCESS`; `sdk-minimal`: false).
    pub max_tokens_as_success: bool,
    /// The context window compaction works against, when it is not the
    /// model's (`DSH_CONTEXT_WINDOW`).
    pub context_window: Option<u64>,
    /// The user's own skills directory (`$DSH_HOME/skills`), if any.
    pub skills_home: Option<std::path::PathBuf>,
    /// The limits of a `workflow` run (`DSH_WORKFLOW_*`).
    pub workflow: dsh_workflow::Limits,
}

impl Profile {
    /// The `sdk` profile in `mode`; approvals are `ask` unless full access.
    pub fn sdk(permission_mode: PermissionMode) -> Self {
        let approval = if permission_mode == PermissionMode::DangerFullAccess {
            ApprovalPolicy::Never
        } else {
            ApprovalPolicy::Ask
        };
        Self {
            kind: ProfileKind::Sdk,
            permission_mode,
            approval,
            system_prompt_override: None,
            max_tokens_as_success: true,
            context_window: None,
            skills_home: None,
            workflow: dsh_workflow::Limits::default(),
        }
    }

    /// This profile in another file-system mode, with the approval policy
    /// [`sdk`](Self::sdk) gives that mode (`dsh acp`'s session modes).
    pub fn with_mode(&self, permission_mode: PermissionMode) -> Self {
        let preset = Self::sdk(permission_mode);
        Self {
            permission_mode,
            approval: preset.approval,
            ..self.clone()
        }
    }

    /// The `sdk-minimal` profile: full access, no approvals, an optional
    /// system prompt of the user's.
    pub fn sdk_minimal(system_prompt: Option<String>) -> Self {
        Self {
            kind: ProfileKind::SdkMinimal,
            permission_mode: PermissionMode::DangerFullAccess,
            approval: ApprovalPolicy::Never,
            system_prompt_override: system_prompt.filter(|s| !s.trim().is_empty()),
            max_tokens_as_success: false,
            context_window: None,
            skills_home: None,
            workflow: dsh_workflow::Limits::default(),
        }
    }

    /// The profile of a child agent: the same, except that nobody answers
    /// its approvals (`never`, as the official runtime delegates).
    pub fn for_child(&self) -> Self {
        Self {
            approval: ApprovalPolicy::Never,
            ..self.clone()
        }
    }

    /// Whether sessions start with `permission/preset`, `sandbox/mode` and
    /// `approval/policy` events.
    pub fn emits_policy_events(&self) -> bool {
        self.kind == ProfileKind::Sdk
    }

    /// Whether agents send the project's instructions and skill catalog
    /// and offer the `skill` tool (`sdk` only).
    pub fn reads_project_context(&self) -> bool {
        self.kind == ProfileKind::Sdk
    }

    /// The system prompt for an agent on `model`.
    pub fn system_prompt(&self, model: &str) -> String {
        match (&self.system_prompt_override, self.kind) {
            (Some(text), _) => text.clone(),
            (None, ProfileKind::Sdk) => prose::sdk_system_prompt(model),
            (None, ProfileKind::SdkMinimal) => prose::MINIMAL_SYSTEM_PROMPT.to_owned(),
        }
    }
}
