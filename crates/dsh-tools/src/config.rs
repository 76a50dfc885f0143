//! Settings shared by the tools of a tool set.

use crate::sandbox::SandboxConfig;
use dsh_session::attachments::AttachmentStore;
use std::path::PathBuf;
use std::time::Duration;

/// Default time a foreground `bash` call waits before moving the command to
/// the background.
pub const DEFAULT_BASH_TIMEOUT: Duration = Duration::from_secs(60);

/// Default limit of one command of the persistent `sdk-minimal` shell.
pub const DEFAULT_SHELL_TIMEOUT: Duration = Duration::from_secs(300);

/// Default limit of one `web_fetch` request.
pub const DEFAULT_WEB_TIMEOUT: Duration = Duration::from_secs(30);

/// Default bound on the bytes of a `web_fetch` body that are read.
pub const DEFAULT_WEB_MAX_BYTES: usize = 5 * 1024 * 1024;

/// Settings of a tool set.
#[derive(Debug, Clone)]
pub struct ToolsConfig {
    /// How `bash` commands are confined.
    pub sandbox: SandboxConfig,
    /// Where long outputs are saved in full (created on demand).
    pub spill_dir: PathBuf,
    /// Foreground wait of `bash` when the call gives no `timeoutMs`.
    pub bash_timeout: Duration,
    /// Limit of one persistent-shell command.
    pub shell_timeout: Duration,
    /// Limit of one `web_fetch` request.
    pub web_timeout: Duration,
    /// Whether `web_fetch` may reach loopback, private and link-local
    /// addresses (true by default, as the official runtime; turned off
    /// with the sandbox network, see [`crate::NetworkAccess`]).
    pub web_private_addresses: bool,
    /// Most bytes of a `web_fetch` body read (`DSH_WEB_FETCH_MAX_BYTES`).
    pub web_max_bytes: usize,
    /// Largest file `read` shows, `edit` changes and `write` writes, in
    /// bytes (`DSH_FILE_MAX_BYTES`; default
    /// [`crate::DEFAULT_FILE_MAX_BYTES`]); `grep` skips files with a line
    /// longer than this.
    pub file_max_bytes: u64,
    /// Where `read_image` stores the images it returns. By default a store
    /// under `spill_dir`; the runtime uses the provider's store in
    /// `DSH_HOME` ([`Self::with_attachments`]), which the provider reads
    /// the images back from.
    pub attachments: AttachmentStore,
    /// How much `bash` output is saved per job and per session, and whether
    /// it is kept after the session (`DSH_SPILL_MAX_BYTES`,
    /// `DSH_SPILL_SESSION_MAX_BYTES`, `DSH_KEEP_TOOL_OUTPUT`).
    pub spill: crate::SpillLimits,
}

impl ToolsConfig {
    /// Defaults: the running executable as sandbox launcher, the real
    /// Landlock probe, long outputs saved under `spill_dir`.
    pub fn new(spill_dir: impl Into<PathBuf>) -> Self {
        let spill_dir = spill_dir.into();
        Self {
            sandbox: SandboxConfig::from_current_exe(),
            attachments: AttachmentStore::new(&spill_dir),
            spill_dir,
            bash_timeout: DEFAULT_BASH_TIMEOUT,
            shell_timeout: DEFAULT_SHELL_TIMEOUT,
            web_timeout: DEFAULT_WEB_TIMEOUT,
            web_private_addresses: true,
            web_max_bytes: DEFAULT_WEB_MAX_BYTES,
            file_max_bytes: crate::DEFAULT_FILE_MAX_BYTES,
            spill: crate::SpillLimits::default(),
        }
    }

    /// A spill directory under the system temporary directory
    /// (`$TMPDIR/dsh-tool-output`), for callers without a better place.
    pub fn default_spill_dir() -> PathBuf {
        std::env::temp_dir().join("dsh-tool-output")
    }

    /// Replaces the attachment store of `read_image`.
    pub fn with_attachments(mut self, attachments: AttachmentStore) -> Self {
        self.attachments = attachments;
        self
    }

    /// Replaces the sandbox settings.
    pub fn with_sandbox(mut self, sandbox: SandboxConfig) -> Self {
        self.sandbox = sandbox;
        self
    }
}
