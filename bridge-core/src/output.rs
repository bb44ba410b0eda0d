//! Writing wire lines to stdout: one write per line, secrets redacted, closed pipes noticed.

use std::io::Write;
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::redact::Redactor;

/// Writes complete lines, each with a single `write_all` of `line + "\n"`, so a line is never
/// interleaved with anything else written to the same pipe.
pub struct LineWriter<W: Write> {
    out: W,
    redactor: Redactor,
    buf: Vec<u8>,
}

impl<W: Write> LineWriter<W> {
    /// The redactor every line passes through.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// Redacts `secret` too from now on (a later request's key, in a session).
    pub fn add_secret(&mut self, secret: &str) {
        self.redactor.add(secret);
    }

    /// Wraps `out`; every line passes through `redactor`.
    pub fn new(out: W, redactor: Redactor) -> Self {
        LineWriter {
            out,
            redactor,
            buf: Vec::with_capacity(4096),
        }
    }

    /// Writes one line. A CR or LF inside it (never produced by the encoders) is replaced by
    /// a space so the line count stays honest.
    pub fn write_line(&mut self, line: &str) -> std::io::Result<()> {
        let line = self.redactor.redact(line);
        self.buf.clear();
        self.buf.extend(
            line.bytes()
                .map(|b| if b == b'\n' || b == b'\r' { b' ' } else { b }),
        );
        self.buf.push(b'\n');
        self.out.write_all(&self.buf)?;
        self.out.flush()
    }

    /// The underlying writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Cancels `cancel` as soon as the reading end of our stdout goes away, even while nothing is
/// being written (a plugin that closed the pipe must not wait for the next line to stop us).
pub fn watch_stdout_closed(cancel: CancellationToken, closed: CancellationToken) {
    #[cfg(unix)]
    tokio::spawn(async move {
        loop {
            let mut fds = libc::pollfd {
                fd: 1,
                events: 0,
                revents: 0,
            };
            // SAFETY: one valid pollfd, zero timeout: poll only reads and writes that struct.
            let ready = unsafe { libc::poll(&mut fds, 1, 0) };
            if ready > 0 && fds.revents & (libc::POLLERR | libc::POLLHUP) != 0 {
                closed.cancel();
                cancel.cancel();
                return;
            }
            tokio::select! {
                _ = cancel.cancelled() => return,
                _ = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
    });
    #[cfg(not(unix))]
    let _ = (cancel, closed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_redacted_and_single() {
        let mut redactor = Redactor::new();
        redactor.add("sk-secret-value");
        let mut writer = LineWriter::new(Vec::new(), redactor);
        writer.write_line("a sk-secret-value\nb").unwrap();
        assert_eq!(writer.into_inner(), b"a [redacted] b\n");
    }
}
