//! The bounded line reader against a model of the documented line policy, with the input
//! arriving in irregular chunks and `next_line` futures dropped mid-read (what `select!` does:
//! the reader claims to be cancel-safe).
//!
//! Policy: split on `\n`; a final unterminated piece is a line too; a piece longer than `max`
//! bytes (counting a trailing `\r`) is `TooLong { bytes }`; otherwise one trailing `\r` is
//! dropped and the bytes are decoded lossily, flagged when they were not valid UTF-8.
#![no_main]

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use bridge_core::lines::{LineItem, LineReader};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, ReadBuf};

/// Serves `data` in chunks, answering `Pending` before every chunk.
struct Chunked {
    data: Vec<u8>,
    pos: usize,
    seed: u32,
    ready: bool,
}

impl Chunked {
    fn next_size(&mut self) -> usize {
        self.seed = self.seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        match (self.seed >> 16) % 4 {
            0 => 1,
            1 => 2 + (self.seed >> 20) as usize % 7,
            2 => 64 + (self.seed >> 20) as usize % 200,
            _ => 70_000,
        }
    }
}

impl AsyncRead for Chunked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.ready {
            self.ready = true;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.ready = false;
        let size = self.next_size();
        let n = size.min(self.data.len() - self.pos).min(buf.remaining());
        let start = self.pos;
        buf.put_slice(&self.data[start..start + n]);
        self.pos += n;
        Poll::Ready(Ok(()))
    }
}

fn model(data: &[u8], max: usize) -> Vec<LineItem> {
    let mut pieces: Vec<&[u8]> = data.split(|b| *b == b'\n').collect();
    if pieces.last().is_some_and(|p| p.is_empty()) {
        pieces.pop(); // after a final `\n`, or empty input
    }
    pieces
        .into_iter()
        .map(|piece| {
            if piece.len() > max {
                return LineItem::TooLong { bytes: piece.len() };
            }
            let piece = piece.strip_suffix(b"\r").unwrap_or(piece);
            match std::str::from_utf8(piece) {
                Ok(text) => LineItem::Line {
                    text: text.to_string(),
                    lossy: false,
                },
                Err(_) => LineItem::Line {
                    text: String::from_utf8_lossy(piece).into_owned(),
                    lossy: true,
                },
            }
        })
        .collect()
}

fuzz_target!(|input: &[u8]| {
    if input.len() < 3 {
        return;
    }
    let max = usize::from(u16::from_le_bytes([input[0], input[1]]) % 300);
    let cancel_pattern = input[2];
    let data = input[3..].to_vec();
    let expected = model(&data, max);

    let mut reader = LineReader::new(
        Chunked {
            data,
            pos: 0,
            seed: u32::from(cancel_pattern),
            ready: false,
        },
        max,
    );
    let mut cx = Context::from_waker(Waker::noop());
    let mut got = Vec::new();
    let mut polls = 0u32;
    loop {
        let mut next = Box::pin(reader.next_line());
        let result = loop {
            match next.as_mut().poll(&mut cx) {
                Poll::Ready(result) => break Some(result),
                Poll::Pending => {
                    polls += 1;
                    // Drop the future now and then, as a `select!` whose other branch won.
                    if (cancel_pattern >> (polls % 8)) & 1 == 1 {
                        break None;
                    }
                }
            }
        };
        drop(next);
        match result {
            None => continue,
            Some(Ok(Some(item))) => got.push(item),
            Some(Ok(None)) => break,
            Some(Err(e)) => panic!("read error: {e}"),
        }
        assert!(got.len() <= expected.len() + 1, "more items than lines");
    }
    assert_eq!(got, expected, "max {max}");
});
