//! Writing the daemon's stdout: one line per write, from many requests at once.

use std::io::Write;
use std::sync::{Arc, Mutex};

use bridge_core::driver::Sink;
use bridge_core::encode::Encoder;
use bridge_core::event::{Event, TurnEnd};
use bridge_core::redact::Redactor;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::wire::{Done, OutputLine, StderrLine};

/// The daemon's stdout, shared by every request. Each line is one `write_all` under a lock, so
/// lines of concurrent requests never interleave; a failed write (the reader is gone) cancels
/// [`Out::closed`].
#[derive(Clone)]
pub struct Out {
    writer: Arc<Mutex<Box<dyn Write + Send>>>,
    closed: CancellationToken,
}

impl Out {
    /// Lines go to `writer`.
    pub fn new(writer: Box<dyn Write + Send>) -> Out {
        Out {
            writer: Arc::new(Mutex::new(writer)),
            closed: CancellationToken::new(),
        }
    }

    /// Cancelled once a write failed.
    pub fn closed(&self) -> CancellationToken {
        self.closed.clone()
    }

    /// Writes `value` as one line.
    pub fn send(&self, value: &impl Serialize) -> std::io::Result<()> {
        let mut line = serde_json::to_vec(value).map_err(std::io::Error::other)?;
        line.push(b'\n');
        let written = match self.writer.lock() {
            Ok(mut writer) => writer.write_all(&line).and_then(|()| writer.flush()),
            Err(_) => Err(std::io::Error::other("stdout writer poisoned")),
        };
        if written.is_err() {
            self.closed.cancel();
        }
        written
    }

    /// The `done` of request `id`. Best effort: a closed stdout has nobody to tell.
    pub fn done(&self, id: Option<&str>, success: bool, error: Option<&str>) {
        let _ = self.send(&Done {
            id,
            done: true,
            success,
            error: if success { None } else { error },
        });
    }

    /// A `stderr` line of request `id` (best effort).
    pub fn stderr(&self, id: &str, text: &str) {
        let _ = self.send(&StderrLine { id, stderr: text });
    }
}

/// Where one request's events go: encoded ([`Encoder`]), redacted, and wrapped as
/// `{"id","line"}` lines; diagnostics as `{"id","stderr"}`.
pub struct ReplySink {
    id: String,
    encoder: Box<dyn Encoder>,
    out: Out,
    redactor: Redactor,
    lines: Vec<String>,
    end: Option<TurnEnd>,
    on_event: Box<dyn FnMut(&Event) + Send>,
}

impl ReplySink {
    /// The sink of request `id`; `on_event` sees every event first (the registry learns the
    /// session id from it).
    pub fn new(
        id: &str,
        encoder: Box<dyn Encoder>,
        out: Out,
        redactor: Redactor,
        on_event: Box<dyn FnMut(&Event) + Send>,
    ) -> ReplySink {
        ReplySink {
            id: id.to_string(),
            encoder,
            out,
            redactor,
            lines: Vec::new(),
            end: None,
            on_event,
        }
    }

    /// The turn's end, once written.
    pub fn end(&self) -> Option<&TurnEnd> {
        self.end.as_ref()
    }
}

impl Sink for ReplySink {
    fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    fn add_secret(&mut self, secret: &str) {
        self.redactor.add(secret);
    }

    fn write_event(&mut self, event: &Event) -> std::io::Result<()> {
        (self.on_event)(event);
        if let Event::TurnEnd(end) = event {
            self.end = Some(end.clone());
        }
        self.lines.clear();
        self.encoder.encode(event, &mut self.lines);
        for line in &self.lines {
            // Redacted before it is escaped into the envelope, where a secret could hide.
            let line = self.redactor.redact(line);
            let line = line.replace(['\r', '\n'], " ");
            self.out.send(&OutputLine {
                id: &self.id,
                line: &line,
            })?;
        }
        Ok(())
    }

    fn write_diagnostic(&mut self, line: &str) {
        self.out.stderr(&self.id, line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bridge_core::encode::Format;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn lines_are_tagged_redacted_and_whole() {
        let buffer = Shared::default();
        let out = Out::new(Box::new(buffer.clone()));
        let mut redactor = Redactor::new();
        redactor.add("sk-daemon-secret-123");
        let encoder =
            Format::Markers.encoder_for(bridge_core::encode::MarkerDialect::SESSION, false, true);
        let mut sink = ReplySink::new("9", encoder, out.clone(), redactor, Box::new(|_| {}));
        sink.write_event(&Event::TextDelta {
            text: "key \"sk-daemon-secret-123\"".into(),
        })
        .unwrap();
        sink.write_diagnostic("[WARNING] x: y");
        out.done(Some("9"), false, Some("failed"));
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        assert!(!text.contains("sk-daemon-secret-123"), "{text}");
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(lines.iter().all(|l| l["id"] == "9"), "{text}");
        assert!(
            lines[0]["line"].as_str().unwrap().contains("[redacted]"),
            "{text}"
        );
        assert_eq!(lines[lines.len() - 2]["stderr"], "[WARNING] x: y");
        assert_eq!(lines.last().unwrap()["error"], "failed");
    }

    #[test]
    fn a_failed_write_marks_stdout_closed() {
        struct Broken;
        impl Write for Broken {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let out = Out::new(Box::new(Broken));
        assert!(!out.closed().is_cancelled());
        out.done(Some("1"), true, None);
        assert!(out.closed().is_cancelled());
    }
}
