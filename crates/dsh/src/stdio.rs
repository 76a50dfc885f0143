//! Makes the protocol channel impossible to corrupt or to read from.

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
    // A pipe of 1 MiB (the unprivileged maximum by default) instead of
    // 64 KiB: a big event or a burst of deltas is written with fewer
    // waits for the client. Not a pipe, or refused: the size stays.
    if let Err(err) = rustix::pipe::fcntl_setpipe_size(&protocol, PROTOCOL_PIPE_SIZE) {
        tracing::debug!("protocol pipe size unchanged: {err}");
    }
    Ok(File::from(protocol))
}

/// The size asked for the protocol's output pipe.
const PROTOCOL_PIPE_SIZE: usize = 1 << 20;

/// Moves the protocol's stdin to a private close-on-exec descriptor and
/// points fd 0 at `/dev/null`. Afterwards a tool reading `/dev/stdin` or
/// `/proc/self/fd/0`, or a child process inheriting fd 0, finds an empty
/// device instead of the client's requests; only the returned file reads
/// them.
pub fn take_protocol_stdin() -> std::io::Result<File> {
    let stdin = std::io::stdin();
    let protocol = fcntl_dupfd_cloexec(stdin.as_fd(), 3)?;
    detach_stdin()?;
    Ok(File::from(protocol))
}

/// Points fd 0 at `/dev/null` (what is left of stdin becomes unreachable).
pub fn detach_stdin() -> std::io::Result<()> {
    let null = File::open("/dev/null")?;
    rustix::stdio::dup2_stdin(null.as_fd())?;
    Ok(())
}
