//! Writing a batch to the log: its encoding, the first write of a claimed
//! session (a temporary file renamed into place) and appends to the open
//! log, cut back when they fail.

use super::replace::temp_path;
use super::{OpenLog, SessionWriter, Sink};
use crate::store::compress;
use crate::store::error::StoreError;
use crate::store::fsutil::create_temp;
use crate::store::layout::{Encoding, probe};
use std::fs::{self, File};
use std::io::{self, Write};

/// A buffer whose capacity grew past this (a large batch) is given back
/// after its batch is written, so an idle session keeps no large buffer.
const KEEP_CAPACITY: usize = 1024;

impl SessionWriter {
    /// The bytes of one batch as stored: `None` for plain logs (the buffer
    /// itself). In zstd logs every batch is one frame, and the header line
    /// is always a frame of its own (the official reader requires the first
    /// frame to hold exactly the header line).
    fn encode(&self, header_frame: bool) -> Result<Option<Vec<u8>>, StoreError> {
        if self.location.encoding == Encoding::Plain {
            return Ok(None);
        }
        let split = if header_frame {
            self.buf
                .iter()
                .position(|b| *b == b'\n')
                .map_or(self.buf.len(), |i| i + 1)
        } else {
            0
        };
        let mut out = Vec::new();
        for part in [&self.buf[..split], &self.buf[split..]] {
            if !part.is_empty() {
                out.extend_from_slice(&compress::frame(part, &self.location.file)?);
            }
        }
        Ok(Some(out))
    }

    /// Writes the log of a claimed session: the buffered header and events.
    pub(super) fn first_write(&mut self) -> Result<(), StoreError> {
        let dir = self.location.dir.clone();
        // Only a handle holding the lock writes a log, and this one has held
        // it since before the directory could hold one; this guards against
        // a writer that ignores the lock.
        if probe(&self.location.id, &dir)?.is_some() {
            return Err(StoreError::AlreadyExists {
                id: self.location.id.clone(),
            });
        }
        let encoded = self.encode(true)?;
        let bytes = encoded.as_deref().unwrap_or(&self.buf);
        let temp = temp_path(&self.location.file);
        let mut file = create_temp(&temp)?;
        let written = file
            .write_all(bytes)
            .map_err(|e| StoreError::io("write", &temp, e))
            .and_then(|()| {
                fs::rename(&temp, &self.location.file)
                    .map_err(|e| StoreError::io("rename", &temp, e))
            });
        if let Err(err) = written {
            let _ = fs::remove_file(&temp);
            return Err(err);
        }
        let len = bytes.len() as u64;
        let Sink::Claimed { claim, .. } =
            std::mem::replace(&mut self.sink, Sink::Poisoned { _lock: None })
        else {
            // Only called from `flush` on a claimed sink.
            return Err(self.poisoned());
        };
        let mut unsynced_dirs = claim.unsynced_dirs;
        unsynced_dirs.push(dir);
        self.sink = Sink::Open(OpenLog {
            file,
            _lock: claim.lock,
            len,
            unsynced_dirs,
        });
        self.written();
        Ok(())
    }

    /// Empties the buffer after its batch was written, giving back the
    /// memory of a large batch.
    fn written(&mut self) {
        self.buf.clear();
        if self.buf.capacity() > KEEP_CAPACITY {
            self.buf = Vec::new();
        }
        self.buffered = 0;
    }

    /// Appends the buffered batch to the open log.
    pub(super) fn write_batch(&mut self) -> Result<(), StoreError> {
        let encoded = self.encode(false)?;
        let buf = std::mem::take(&mut self.buf);
        let result = self.write_open(encoded.as_deref().unwrap_or(&buf));
        self.buf = buf;
        if result.is_ok() {
            self.written();
        }
        result
    }

    /// Appends `bytes` (one or more complete batches, as stored) to the open
    /// log with one write; a failed write is cut back, or poisons the writer
    /// if even that fails.
    fn write_open(&mut self, bytes: &[u8]) -> Result<(), StoreError> {
        self.write_open_with(|out| out.write_all(bytes))
    }

    /// Appends what `write` writes (complete batches) to the open log; a
    /// failed write is cut back to the length before it, or poisons the
    /// writer if even that fails.
    pub(super) fn write_open_with(
        &mut self,
        write: impl FnOnce(&mut Counted<'_>) -> io::Result<()>,
    ) -> Result<(), StoreError> {
        #[cfg(test)]
        if self.failing_writes > 0 {
            self.failing_writes -= 1;
            return Err(StoreError::io(
                "write",
                &self.location.file,
                io::Error::from_raw_os_error(rustix::io::Errno::NOSPC.raw_os_error()),
            ));
        }
        let Sink::Open(log) = &mut self.sink else {
            return Err(self.poisoned());
        };
        let mut out = Counted {
            file: &mut log.file,
            written: 0,
        };
        let result = write(&mut out);
        let written = out.written;
        match result {
            Ok(()) => {
                log.len += written;
                Ok(())
            }
            Err(err) => {
                let error = StoreError::io("write", &self.location.file, err);
                if log.file.set_len(log.len).is_err()
                    && let Sink::Open(log) =
                        std::mem::replace(&mut self.sink, Sink::Poisoned { _lock: None })
                {
                    self.sink = Sink::Poisoned {
                        _lock: Some(log._lock),
                    };
                }
                Err(error)
            }
        }
    }
}

/// The open log file, counting the bytes written to it.
pub(super) struct Counted<'a> {
    file: &'a mut File,
    written: u64,
}

impl Write for Counted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        let n = self.file.write_vectored(bufs)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}
