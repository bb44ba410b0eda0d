//! A transcript of what passed between the bridge and a CLI: its raw stdout, stderr and the
//! bytes the bridge wrote to its stdin, each in a file of its own.
//!
//! `bridge <provider> send --record PREFIX` writes `PREFIX.stdout`, `PREFIX.stderr` and (when
//! anything was written to the CLI) `PREFIX.stdin`, and `PREFIX.command` (the argv it ran) and `PREFIX.exit` (how it ended): what a bug report needs, and what the
//! recorder (`tests/record.rs`) files into the transcript corpus (`tests/corpus`). Every line is
//! redacted like the bridge's own output, so no key reaches a recording. The files hold the
//! CLI's bytes, not the bridge's events: replaying them through a normalizer reproduces the turn.
//!
//! ```
//! use bridge_core::record::Recording;
//! use bridge_core::redact::Redactor;
//!
//! let dir = tempfile::tempdir().unwrap();
//! let mut redactor = Redactor::new();
//! redactor.add("sk-secret-123456");
//! let recording = Recording::create(&dir.path().join("turn"), redactor).unwrap();
//! recording.stdout(b"{\"key\":\"sk-secret-123456\"}\n{\"par");
//! recording.stdout(b"tial\":1}\n");
//! recording.finish();
//! let stdout = std::fs::read_to_string(dir.path().join("turn.stdout")).unwrap();
//! assert_eq!(stdout, "{\"key\":\"[redacted]\"}\n{\"partial\":1}\n");
//! ```

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::redact::Redactor;

/// A line longer than this is written as it is once it reaches the size, instead of being held
/// until its end (a recording must not hold a 64 MiB line in memory); a secret split exactly at
/// that boundary would escape redaction, which is why the limit is far above any real line.
const MAX_HELD_LINE: usize = 4 * 1024 * 1024;

/// One recorded stream: its file (opened at the first byte) and the start of a line not yet
/// ended.
#[derive(Debug)]
struct Stream {
    path: PathBuf,
    file: Option<File>,
    held: Vec<u8>,
    failed: bool,
}

impl Stream {
    fn new(path: PathBuf) -> Self {
        Stream {
            path,
            file: None,
            held: Vec::new(),
            failed: false,
        }
    }

    fn push(&mut self, bytes: &[u8], redactor: &Redactor) {
        self.held.extend_from_slice(bytes);
        let complete = match memchr::memrchr(b'\n', &self.held) {
            Some(end) => end + 1,
            None if self.held.len() >= MAX_HELD_LINE => self.held.len(),
            None => return,
        };
        let rest = self.held.split_off(complete);
        let lines = std::mem::replace(&mut self.held, rest);
        self.write(&lines, redactor);
    }

    fn flush(&mut self, redactor: &Redactor) {
        let held = std::mem::take(&mut self.held);
        if !held.is_empty() {
            self.write(&held, redactor);
        }
    }

    fn write(&mut self, bytes: &[u8], redactor: &Redactor) {
        if self.failed {
            return;
        }
        if self.file.is_none() {
            match File::create(&self.path) {
                Ok(file) => self.file = Some(file),
                Err(_) => {
                    // A recording is a side channel: failing to write it never fails the turn.
                    self.failed = true;
                    return;
                }
            }
        }
        let Some(file) = self.file.as_mut() else {
            return;
        };
        let written = match std::str::from_utf8(bytes) {
            Ok(text) => file.write_all(redactor.redact(text).as_bytes()),
            // Invalid UTF-8 is recorded as it came (the corpus keeps the CLI's bytes), redacted
            // in its decodable form only when a secret is visible there.
            Err(_) => {
                let lossy = String::from_utf8_lossy(bytes);
                match redactor.redact(&lossy) {
                    std::borrow::Cow::Borrowed(_) => file.write_all(bytes),
                    std::borrow::Cow::Owned(redacted) => file.write_all(redacted.as_bytes()),
                }
            }
        };
        if written.is_err() {
            self.failed = true;
        }
    }
}

#[derive(Debug)]
struct Streams {
    stdout: Stream,
    stderr: Stream,
    stdin: Stream,
    command: Stream,
    exit: Stream,
}

/// Where one CLI run is recorded (see the module docs). Shared by the reader, the writer and
/// the stderr task of the child; cheap to clone behind an [`Arc`].
#[derive(Debug)]
pub struct Recording {
    redactor: Redactor,
    streams: Mutex<Streams>,
}

impl Recording {
    /// A recording into `prefix.stdout`, `prefix.stderr` and `prefix.stdin` (each created at its
    /// first byte, truncating an older file), redacting with `redactor`. Fails when the
    /// directory of `prefix` does not exist or is not writable.
    pub fn create(prefix: &Path, redactor: Redactor) -> std::io::Result<Arc<Recording>> {
        let dir = match prefix.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("{} is not a directory", dir.display()),
            ));
        }
        let with = |extension: &str| {
            let mut name = prefix.as_os_str().to_owned();
            name.push(".");
            name.push(extension);
            PathBuf::from(name)
        };
        // Files left by an earlier recording under the same prefix would mix two runs.
        for extension in ["stdout", "stderr", "stdin", "command", "exit"] {
            let _ = std::fs::remove_file(with(extension));
        }
        Ok(Arc::new(Recording {
            redactor,
            streams: Mutex::new(Streams {
                stdout: Stream::new(with("stdout")),
                stderr: Stream::new(with("stderr")),
                stdin: Stream::new(with("stdin")),
                command: Stream::new(with("command")),
                exit: Stream::new(with("exit")),
            }),
        }))
    }

    fn with_streams(&self, f: impl FnOnce(&mut Streams, &Redactor)) {
        if let Ok(mut streams) = self.streams.lock() {
            f(&mut streams, &self.redactor);
        }
    }

    /// Records a command the bridge started: one line in `prefix.command`, the JSON array of
    /// the program's file name and its arguments (redacted like everything else).
    pub fn command(&self, program: &Path, args: &[std::ffi::OsString]) {
        let name = program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let argv: Vec<String> = std::iter::once(name)
            .chain(args.iter().map(|a| a.to_string_lossy().into_owned()))
            .collect();
        let line = format!("{}\n", serde_json::Value::from(argv));
        self.with_streams(|s, r| s.command.push(line.as_bytes(), r));
    }

    /// Records how a command ended (one line in `prefix.exit`, e.g. `exit code 75`).
    pub fn exit(&self, how: &str) {
        let line = format!("{how}\n");
        self.with_streams(|s, r| s.exit.push(line.as_bytes(), r));
    }

    /// Records bytes the CLI printed on stdout.
    pub fn stdout(&self, bytes: &[u8]) {
        self.with_streams(|s, r| s.stdout.push(bytes, r));
    }

    /// Records one line the CLI printed on stderr (without its line end).
    pub fn stderr_line(&self, line: &str) {
        self.with_streams(|s, r| {
            s.stderr.push(line.as_bytes(), r);
            s.stderr.push(b"\n", r);
        });
    }

    /// Records bytes the bridge wrote to the CLI's stdin.
    pub fn stdin(&self, bytes: &[u8]) {
        self.with_streams(|s, r| s.stdin.push(bytes, r));
    }

    /// Writes what is still held (a last line without its end). Also done on drop.
    pub fn finish(&self) {
        self.with_streams(|s, r| {
            s.stdout.flush(r);
            s.stderr.flush(r);
            s.stdin.flush(r);
            s.command.flush(r);
        });
    }
}

impl Drop for Recording {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A child's stdout that also records what is read from it (when a [`Recording`] is set).
#[derive(Debug)]
pub struct RecordedReader<R> {
    inner: R,
    recording: Option<Arc<Recording>>,
}

impl<R> RecordedReader<R> {
    /// Reads `inner`, recording into `recording` when there is one.
    pub fn new(inner: R, recording: Option<Arc<Recording>>) -> Self {
        RecordedReader { inner, recording }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for RecordedReader<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let (Poll::Ready(Ok(())), Some(recording)) = (&polled, &self.recording) {
            recording.stdout(&buf.filled()[before..]);
        }
        polled
    }
}

/// A child's stdin that also records what is written to it (when a [`Recording`] is set).
#[derive(Debug)]
pub struct RecordedWriter<W> {
    inner: W,
    recording: Option<Arc<Recording>>,
}

impl<W> RecordedWriter<W> {
    /// Writes to `inner`, recording into `recording` when there is one.
    pub fn new(inner: W, recording: Option<Arc<Recording>>) -> Self {
        RecordedWriter { inner, recording }
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for RecordedWriter<W> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let (Poll::Ready(Ok(n)), Some(recording)) = (&polled, &self.recording) {
            recording.stdin(&buf[..*n]);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(path: &Path) -> String {
        std::fs::read_to_string(path).unwrap_or_default()
    }

    #[test]
    fn a_secret_split_across_two_reads_is_redacted_and_nothing_is_lost() {
        let dir = tempfile::tempdir().unwrap();
        let mut redactor = Redactor::new();
        redactor.add("sk-canary-0123456789");
        let prefix = dir.path().join("t");
        let recording = Recording::create(&prefix, redactor).unwrap();
        recording.stdout(b"a sk-canary-01");
        recording.stdout(b"23456789 b\nlast line without end");
        recording.stderr_line("err sk-canary-0123456789");
        drop(recording);
        assert_eq!(
            read(&dir.path().join("t.stdout")),
            "a [redacted] b\nlast line without end"
        );
        assert_eq!(read(&dir.path().join("t.stderr")), "err [redacted]\n");
        assert!(!dir.path().join("t.stdin").exists(), "nothing written");
    }

    #[test]
    fn invalid_utf8_is_kept_as_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let recording = Recording::create(&dir.path().join("t"), Redactor::new()).unwrap();
        recording.stdout(b"\xff\xfe bytes\n");
        recording.finish();
        assert_eq!(
            std::fs::read(dir.path().join("t.stdout")).unwrap(),
            b"\xff\xfe bytes\n"
        );
    }

    #[test]
    fn a_missing_directory_is_an_error() {
        let error = Recording::create(Path::new("/nonexistent-dir/x"), Redactor::new())
            .expect_err("no such directory");
        assert!(error.to_string().contains("/nonexistent-dir"), "{error}");
    }

    #[tokio::test]
    async fn the_reader_and_writer_record_what_passes() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let dir = tempfile::tempdir().unwrap();
        let recording = Recording::create(&dir.path().join("t"), Redactor::new()).unwrap();
        let mut reader = RecordedReader::new(&b"line 1\nline 2\n"[..], Some(recording.clone()));
        let mut text = String::new();
        reader.read_to_string(&mut text).await.unwrap();
        let mut writer = RecordedWriter::new(Vec::new(), Some(recording.clone()));
        writer.write_all(b"{\"type\":\"user\"}\n").await.unwrap();
        drop((reader, writer));
        recording.finish();
        assert_eq!(read(&dir.path().join("t.stdout")), "line 1\nline 2\n");
        assert_eq!(read(&dir.path().join("t.stdin")), "{\"type\":\"user\"}\n");
    }
}
