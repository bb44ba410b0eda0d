//! A bounded, byte-level line reader for child output.
//!
//! `AsyncBufReadExt::lines()` has no length bound and turns invalid UTF-8 into an error; a CLI
//! that prints one 64 MiB line or a stray binary byte must not cost unbounded memory or end the
//! stream. The line policy:
//!
//! * lines are split on `\n`; a trailing `\r` is dropped;
//! * invalid UTF-8 is decoded lossily (U+FFFD) and flagged, never a panic or an error;
//! * a line longer than the cap is skipped up to its newline without being buffered and
//!   reported as [`LineItem::TooLong`] with its length: memory stays at the cap.

use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};

/// Default cap on one line: large enough for big tool results, small enough to bound memory.
pub const DEFAULT_MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One item read from the stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineItem {
    /// A line (without its terminator).
    Line {
        /// The text, lossily decoded.
        text: String,
        /// True when the bytes were not valid UTF-8 and replacement characters were inserted.
        lossy: bool,
    },
    /// A line longer than the cap was skipped.
    TooLong {
        /// Its length in bytes.
        bytes: usize,
    },
}

/// Reads lines of at most `max` bytes from an async byte stream.
#[derive(Debug)]
pub struct LineReader<R> {
    inner: BufReader<R>,
    buf: Vec<u8>,
    /// Bytes of the current over-long line skipped so far (kept here so that a cancelled
    /// `next_line` future loses nothing: the method is cancel-safe).
    skipped: Option<usize>,
    max: usize,
}

impl<R: AsyncRead + Unpin> LineReader<R> {
    /// Wraps `reader`; lines longer than `max` bytes are skipped.
    pub fn new(reader: R, max: usize) -> Self {
        LineReader {
            inner: BufReader::with_capacity(64 * 1024, reader),
            buf: Vec::new(),
            skipped: None,
            max,
        }
    }

    /// The next line, or `None` at EOF. A final line without `\n` is returned too.
    ///
    /// Cancel-safe: partial lines stay buffered in the reader, so this can be used in `select!`.
    pub async fn next_line(&mut self) -> std::io::Result<Option<LineItem>> {
        loop {
            let chunk = self.inner.fill_buf().await?;
            if chunk.is_empty() {
                return Ok(match self.skipped.take() {
                    Some(bytes) => Some(LineItem::TooLong { bytes }),
                    None if self.buf.is_empty() => None,
                    None => Some(self.finish()),
                });
            }
            let (take, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (i, true),
                None => (chunk.len(), false),
            };
            match &mut self.skipped {
                Some(bytes) => *bytes += take,
                None if self.buf.len() + take > self.max => {
                    self.skipped = Some(self.buf.len() + take);
                    self.buf.clear();
                    self.buf.shrink_to(64 * 1024);
                }
                None => self.buf.extend_from_slice(&chunk[..take]),
            }
            self.inner.consume(if done { take + 1 } else { take });
            if done {
                return Ok(Some(match self.skipped.take() {
                    Some(bytes) => LineItem::TooLong { bytes },
                    None => self.finish(),
                }));
            }
        }
    }

    fn finish(&mut self) -> LineItem {
        if self.buf.last() == Some(&b'\r') {
            self.buf.pop();
        }
        let item = match std::str::from_utf8(&self.buf) {
            Ok(text) => LineItem::Line {
                text: text.to_string(),
                lossy: false,
            },
            Err(_) => LineItem::Line {
                text: String::from_utf8_lossy(&self.buf).into_owned(),
                lossy: true,
            },
        };
        self.buf.clear();
        if self.buf.capacity() > 1024 * 1024 {
            // A huge earlier line must not pin its buffer for the rest of the stream.
            self.buf.shrink_to(64 * 1024);
        }
        item
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn read_all(input: &[u8], max: usize) -> Vec<LineItem> {
        let mut reader = LineReader::new(input, max);
        let mut items = Vec::new();
        while let Some(item) = reader.next_line().await.unwrap() {
            items.push(item);
        }
        items
    }

    fn line(text: &str) -> LineItem {
        LineItem::Line {
            text: text.into(),
            lossy: false,
        }
    }

    #[tokio::test]
    async fn splits_lines_and_keeps_a_final_unterminated_one() {
        assert_eq!(
            read_all(b"a\r\nb\n\nc", 100).await,
            vec![line("a"), line("b"), line(""), line("c")]
        );
    }

    #[tokio::test]
    async fn over_long_lines_are_skipped_and_reading_continues() {
        let mut input = vec![b'x'; 300_000];
        input.extend_from_slice(b"\nafter\n");
        input.extend(vec![b'y'; 50]);
        assert_eq!(
            read_all(&input, 1000).await,
            vec![
                LineItem::TooLong { bytes: 300_000 },
                line("after"),
                line(&"y".repeat(50)),
            ]
        );
        let mut unterminated = vec![b'z'; 5000];
        unterminated.insert(0, b'\n');
        assert_eq!(
            read_all(&unterminated, 1000).await,
            vec![line(""), LineItem::TooLong { bytes: 5000 }]
        );
    }

    #[tokio::test]
    async fn invalid_utf8_is_lossy_not_fatal() {
        let items = read_all(b"ok\n\xff\xfe{\"a\":1}\nend\n", 100).await;
        assert_eq!(items[0], line("ok"));
        assert_eq!(
            items[1],
            LineItem::Line {
                text: "\u{fffd}\u{fffd}{\"a\":1}".into(),
                lossy: true
            }
        );
        assert_eq!(items[2], line("end"));
    }
}
