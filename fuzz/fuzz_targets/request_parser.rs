//! The request parser: `Request::from_json` never panics, accepts only what it documents, and
//! the streaming reader (`read_request`, which stops at the end of the first JSON value and
//! parses only when the buffer ends in `}` or at EOF) agrees with it however stdin is chunked.
#![no_main]

use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll};
use std::time::Duration;

use bridge_core::request::{Request, RequestError, read_request};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, ReadBuf};

/// Serves `data` in chunks of the given sizes (cycled), like a pipe does.
struct Chunked<'a> {
    data: &'a [u8],
    sizes: &'a [usize],
    next: usize,
}

impl AsyncRead for Chunked<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let size = self.sizes[self.next % self.sizes.len()];
        self.next += 1;
        let n = size.min(self.data.len()).min(buf.remaining());
        buf.put_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Poll::Ready(Ok(()))
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .expect("runtime")
    })
}

fn read(data: &[u8], sizes: &[usize]) -> Result<(Request, Vec<u8>), RequestError> {
    let mut reader = Chunked {
        data,
        sizes,
        next: 0,
    };
    runtime()
        .block_on(read_request(&mut reader, Duration::from_secs(60)))
        .map(|r| (r.request, r.rest))
}

fn valid_session_id(id: &str) -> bool {
    id.len() <= 256
        && !id.contains("..")
        && !id.starts_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | ':'))
}

/// Where `from_json` and `read_request` are meant to agree. They differ on invalid UTF-8
/// (`from_json` decodes lossily, `read_request`, what `bridge send` uses, rejects it as
/// malformed JSON) and on non-JSON whitespace around the value (`from_json` trims Unicode
/// whitespace such as a vertical tab or U+00A0, `read_request` does not).
fn comparable(data: &[u8]) -> bool {
    std::str::from_utf8(data)
        .is_ok_and(|text| text.trim() == text.trim_matches([' ', '\t', '\n', '\r']))
}

fuzz_target!(|data: &[u8]| {
    let parsed = Request::from_json(data);
    if let Ok(request) = &parsed {
        assert!(!request.message.trim().is_empty(), "empty message accepted");
        if let Some(id) = &request.session_id {
            assert!(valid_session_id(id), "session id {id:?} accepted");
        }
        if request.api_key.is_some() {
            assert_eq!(format!("{:?}", request.api_key), "Some([redacted])");
        }
    }

    // One piece, then small irregular chunks (a boundary can fall right after a `}` inside
    // a string): the outcome must not depend on how stdin was chunked. Only `rest` may be
    // shorter (the reader stops reading once the request is complete; the remainder stays in
    // the pipe for the control reader), never different.
    let whole = read(data, &[usize::MAX]);
    let seed = data.len();
    let sizes = [1 + seed % 5, 1, 3 + seed % 11, 64, 2];
    let chunked = read(data, &sizes);
    match (&whole, &chunked) {
        (Ok((a, rest_a)), Ok((b, rest_b))) => {
            assert_eq!(a, b, "read_request depends on chunking");
            assert!(
                rest_a.starts_with(rest_b),
                "rest {rest_b:?} is not a prefix of {rest_a:?}"
            );
        }
        (a, b) => assert_eq!(
            a.as_ref().err(),
            b.as_ref().err(),
            "read_request depends on chunking"
        ),
    }

    match &whole {
        Ok((request, rest)) => {
            // What was consumed is exactly one request the plain parser accepts.
            let consumed = &data[..data.len() - rest.len()];
            assert_eq!(Request::from_json(consumed).as_ref(), Ok(request));
        }
        Err(_) => {
            // The plain parser accepts only a single value, so it cannot be more lenient.
            if comparable(data) {
                assert!(
                    parsed.is_err(),
                    "from_json accepted what read_request rejected"
                );
            }
        }
    }
    if let (Ok(request), true) = (parsed, comparable(data)) {
        let (streamed, rest) = whole.expect("read_request accepts a whole valid request");
        assert_eq!(streamed, request);
        // Only whitespace may follow.
        assert!(
            String::from_utf8_lossy(&rest).trim().is_empty(),
            "rest {rest:?}"
        );
    }
});
