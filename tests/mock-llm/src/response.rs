//! Dialect-neutral responses: what the connection loop writes back.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// One piece of a streamed response.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Frame {
    /// One complete SSE event (`event: …\ndata: …\n\n`), written as one chunk and flushed.
    Event(String),
    /// Wait before the next frame.
    Pause(Duration),
    /// Drop the connection here (no terminating chunk).
    Cut,
}

/// A response to one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Response {
    /// A complete body with `content-length`.
    Full {
        status: u16,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    },
    /// A chunked body made of frames.
    Stream {
        status: u16,
        headers: Vec<(String, String)>,
        frames: Vec<Frame>,
    },
    /// Close the connection without answering.
    Drop,
}

impl Response {
    /// A JSON response.
    pub fn json(status: u16, body: &Value) -> Self {
        Response::Full {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string().into_bytes(),
        }
    }

    /// An empty response.
    pub fn empty(status: u16) -> Self {
        Response::Full {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// The same response with one more header.
    pub fn with_header(mut self, name: &str, value: String) -> Self {
        match &mut self {
            Response::Full { headers, .. } | Response::Stream { headers, .. } => {
                headers.push((name.to_string(), value));
            }
            Response::Drop => {}
        }
        self
    }
}

/// Generates unique ids (`msg_…`, `toolu_…`, `req_mock_…`): a per-server random-ish prefix and a
/// counter, so ids never repeat across server instances that share one client session.
#[derive(Debug)]
pub(crate) struct Ids {
    nonce: u64,
    counter: AtomicU64,
}

impl Ids {
    pub fn new() -> Self {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let local = 0u8;
        let addr = &local as *const u8 as u64;
        // splitmix64 of time, pid and a stack address.
        let mut z = now ^ (u64::from(std::process::id()) << 32) ^ addr;
        z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Self {
            nonce: z ^ (z >> 31),
            counter: AtomicU64::new(1),
        }
    }

    /// The next id with `prefix`: 24 hex digits after it.
    pub fn next(&self, prefix: &str) -> String {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        format!("{prefix}{:016x}{:08x}", self.nonce, n as u32)
    }
}
