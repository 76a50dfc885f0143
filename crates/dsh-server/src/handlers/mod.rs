//! One module per method family: validate params through their
//! [`dsh_protocol::methods`] type, with the server-state checks in the
//! official order around it, then act.

pub mod history;
pub mod initialize;
pub mod prompt;
pub mod session;
pub mod sessions;
pub mod working_directory;
