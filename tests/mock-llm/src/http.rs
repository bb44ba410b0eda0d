//! A small HTTP/1.1 server side: request parsing and response writing over tokio streams.
//!
//! Supports what model clients send: keep-alive, `Content-Length` and `chunked` request bodies,
//! `Expect: 100-continue`; responses with `Content-Length`, or chunked (one chunk per SSE event,
//! written straight to the socket so each event leaves immediately).

use std::fmt;
use std::time::Duration;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Largest request head (request line + headers) accepted.
const MAX_HEAD: usize = 256 * 1024;
/// Largest request body accepted.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A parsed HTTP request.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    /// The request target as sent (path and query).
    pub target: String,
    /// `true` for HTTP/1.1, `false` for HTTP/1.0.
    pub http11: bool,
    /// Headers in arrival order, names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The first value of header `name` (lower-case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The path, without the query string.
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// Whether the connection stays open after this request.
    pub fn keep_alive(&self) -> bool {
        let conn = self.header("connection").unwrap_or("").to_ascii_lowercase();
        let has = |tok: &str| conn.split(',').any(|t| t.trim() == tok);
        if self.http11 {
            !has("close")
        } else {
            has("keep-alive")
        }
    }
}

/// Why a request could not be read.
#[derive(Debug)]
pub(crate) enum ReadError {
    /// The peer closed the connection or the socket failed.
    Io(std::io::Error),
    /// The bytes are not a request we accept; answer with this status and close.
    Bad(u16, &'static str),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Io(e) => write!(f, "{e}"),
            ReadError::Bad(code, msg) => write!(f, "{code} {msg}"),
        }
    }
}

impl From<std::io::Error> for ReadError {
    fn from(e: std::io::Error) -> Self {
        ReadError::Io(e)
    }
}

/// Reads one line (up to and including `\n`) into `buf`, counting it against `budget`.
async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    budget: &mut usize,
) -> Result<usize, ReadError> {
    buf.clear();
    let n = (&mut *r)
        .take(*budget as u64 + 1)
        .read_until(b'\n', buf)
        .await?;
    if n > *budget {
        return Err(ReadError::Bad(431, "request head too large"));
    }
    *budget -= n;
    Ok(n)
}

fn trim_crlf(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads the next request from `conn`. `Ok(None)` means the peer closed the connection cleanly
/// between requests. Answers `Expect: 100-continue` before reading the body.
pub(crate) async fn read_request<S>(
    conn: &mut tokio::io::BufReader<S>,
) -> Result<Option<Request>, ReadError>
where
    S: tokio::io::AsyncRead + AsyncWrite + Unpin,
{
    let mut budget = MAX_HEAD;
    let mut line = Vec::new();
    // Skip empty lines before a request (RFC 9112 §2.2 tolerance).
    loop {
        let n = read_line(conn, &mut line, &mut budget).await?;
        if n == 0 {
            return Ok(None);
        }
        if !trim_crlf(&line).is_empty() {
            break;
        }
    }
    let request_line = std::str::from_utf8(trim_crlf(&line))
        .map_err(|_| ReadError::Bad(400, "bad request line"))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Bad(400, "bad request line"));
    };
    let http11 = match version {
        "HTTP/1.1" => true,
        "HTTP/1.0" => false,
        _ => return Err(ReadError::Bad(505, "HTTP version not supported")),
    };
    let (method, target) = (method.to_string(), target.to_string());

    let mut headers = Vec::new();
    loop {
        let n = read_line(conn, &mut line, &mut budget).await?;
        if n == 0 {
            return Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        let l = trim_crlf(&line);
        if l.is_empty() {
            break;
        }
        let l = String::from_utf8_lossy(l);
        let Some((name, value)) = l.split_once(':') else {
            return Err(ReadError::Bad(400, "bad header line"));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }
    let mut req = Request {
        method,
        target,
        http11,
        headers,
        body: Vec::new(),
    };

    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|te| te.to_ascii_lowercase().contains("chunked"));
    let length = match req.header("content-length") {
        Some(v) => Some(
            v.parse::<usize>()
                .map_err(|_| ReadError::Bad(400, "bad content-length"))?,
        ),
        None => None,
    };
    if length.is_some_and(|n| n > MAX_BODY) {
        return Err(ReadError::Bad(413, "request body too large"));
    }
    let has_body = chunked || length.is_some_and(|n| n > 0);
    if has_body
        && req.http11
        && req
            .header("expect")
            .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        let w = conn.get_mut();
        w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
        w.flush().await?;
    }
    if chunked {
        req.body = read_chunked(conn).await?;
    } else if let Some(n) = length {
        let mut body = vec![0; n];
        conn.read_exact(&mut body).await?;
        req.body = body;
    }
    Ok(Some(req))
}

/// Reads a chunked body (and its trailers).
async fn read_chunked<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    let mut line = Vec::new();
    loop {
        let mut budget = 1024;
        if read_line(r, &mut line, &mut budget).await? == 0 {
            return Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        let size_text = String::from_utf8_lossy(trim_crlf(&line));
        let size_hex = size_text.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| ReadError::Bad(400, "bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            let mut budget = MAX_HEAD;
            loop {
                if read_line(r, &mut line, &mut budget).await? == 0 || trim_crlf(&line).is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY {
            return Err(ReadError::Bad(413, "request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..]).await?;
        let mut budget = 2;
        read_line(r, &mut line, &mut budget).await?;
    }
}

/// The reason phrase for `status`.
pub(crate) fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        529 => "Site Overloaded",
        _ => "Unknown",
    }
}

fn head(status: u16, headers: &[(String, String)], keep_alive: bool, framing: &str) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str(framing);
    out.push_str(if keep_alive {
        "connection: keep-alive\r\n\r\n"
    } else {
        "connection: close\r\n\r\n"
    });
    out.into_bytes()
}

/// Writes a complete response with a `content-length` body.
pub(crate) async fn write_full<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    keep_alive: bool,
) -> std::io::Result<()> {
    let mut out = head(
        status,
        headers,
        keep_alive,
        &format!("content-length: {}\r\n", body.len()),
    );
    out.extend_from_slice(body);
    w.write_all(&out).await?;
    w.flush().await
}

/// A response body written in chunks, each flushed on its own.
pub(crate) struct Chunked<'a, W> {
    w: &'a mut W,
}

impl<'a, W: AsyncWrite + Unpin> Chunked<'a, W> {
    /// Writes the response head of a chunked response.
    pub async fn start(
        w: &'a mut W,
        status: u16,
        headers: &[(String, String)],
        keep_alive: bool,
    ) -> std::io::Result<Self> {
        let out = head(
            status,
            headers,
            keep_alive,
            "transfer-encoding: chunked\r\n",
        );
        w.write_all(&out).await?;
        w.flush().await?;
        Ok(Self { w })
    }

    /// Writes `data` as one chunk and flushes it.
    pub async fn chunk(&mut self, data: &[u8]) -> std::io::Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        let mut out = format!("{:x}\r\n", data.len()).into_bytes();
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
        self.w.write_all(&out).await?;
        self.w.flush().await
    }

    /// Waits `d` (a pause between events).
    pub async fn pause(&mut self, d: Duration) {
        if !d.is_zero() {
            tokio::time::sleep(d).await;
        }
    }

    /// Writes the terminating chunk.
    pub async fn finish(self) -> std::io::Result<()> {
        self.w.write_all(b"0\r\n\r\n").await?;
        self.w.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncWriteExt, BufReader, duplex};

    async fn parse(raw: &[u8]) -> (Option<Request>, Vec<u8>) {
        let (client, server) = duplex(1 << 20);
        let (mut cr, mut cw) = tokio::io::split(client);
        cw.write_all(raw).await.unwrap();
        cw.shutdown().await.unwrap();
        let mut conn = BufReader::new(server);
        let req = read_request(&mut conn).await.unwrap();
        drop(conn);
        let mut back = Vec::new();
        cr.read_to_end(&mut back).await.unwrap();
        (req, back)
    }

    #[tokio::test]
    async fn content_length_body() {
        let (req, back) = parse(
            b"POST /v1/messages?beta=true HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}",
        )
        .await;
        let req = req.unwrap();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path(), "/v1/messages");
        assert_eq!(req.header("host"), Some("x"));
        assert_eq!(req.body, b"{}");
        assert!(req.keep_alive());
        assert!(back.is_empty());
    }

    #[tokio::test]
    async fn chunked_body_with_expect_continue() {
        let raw = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\nExpect: 100-continue\r\n\
                    Connection: close\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nX-T: 1\r\n\r\n";
        let (req, back) = parse(raw).await;
        let req = req.unwrap();
        assert_eq!(req.body, b"abcde");
        assert!(!req.keep_alive());
        assert_eq!(back, b"HTTP/1.1 100 Continue\r\n\r\n");
    }

    #[tokio::test]
    async fn eof_and_garbage() {
        assert!(parse(b"").await.0.is_none());
        let (client, server) = duplex(1024);
        let (_cr, mut cw) = tokio::io::split(client);
        cw.write_all(b"NONSENSE\r\n\r\n").await.unwrap();
        let mut conn = BufReader::new(server);
        assert!(matches!(
            read_request(&mut conn).await,
            Err(ReadError::Bad(400, _))
        ));
    }

    #[test]
    fn http10_defaults_to_close() {
        let req = Request {
            method: "GET".into(),
            target: "/".into(),
            http11: false,
            headers: vec![],
            body: vec![],
        };
        assert!(!req.keep_alive());
    }
}
