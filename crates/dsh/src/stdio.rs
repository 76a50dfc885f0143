//! Makes the protocol channel impossible to corrupt.

use rustix::io::fcntl_dupfd_cloexec;
use std::fs::File;
use std::os::fd::AsFd;

/// Moves the protocol's stdout to a private close-on-exec descriptor and
/// points fd 1 at stderr. Afterwards a stray `println!`, a library writing to
/// stdout or a child process inheriting fd 1 all land on stderr; only the
/// returned file reaches the client.
pub fn take_protocol_stdout() -> std::io::Result<File> {
    let stdout = std::io::stdout();
    let protocol = fcntl_dupfd_cloexec(stdout.as_fd(), 3)?;
    rustix::stdio::dup2_stdout(std::io::stderr().as_fd())?;
    Ok(File::from(protocol))
}
