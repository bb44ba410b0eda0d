//! The legacy HTTP+SSE transport (MCP 2024-11-05) as an rmcp transport, since rmcp 3 ships
//! only its successor, streamable HTTP.
//!
//! The client opens `GET <url>` (`Accept: text/event-stream`); the server's first event is
//! `endpoint`, whose data is the URL (relative to the stream's) to POST each client message
//! to; the server's messages arrive as `message` events on the stream.

use std::pin::Pin;

use futures_util::{Sink, Stream, StreamExt};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};

use crate::config::HttpServer;
use crate::probe::ProbeError;

/// Why a message could not be sent over SSE.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct SseError(String);

type Incoming = Pin<Box<dyn Stream<Item = RxJsonRpcMessage<RoleClient>> + Send>>;
type Outgoing = Pin<Box<dyn Sink<TxJsonRpcMessage<RoleClient>, Error = SseError> + Send>>;

/// An open SSE connection: the event stream read, the endpoint known.
pub(crate) struct SseTransport;

impl SseTransport {
    /// Opens the stream and waits for its `endpoint` event; returns the sink and stream rmcp
    /// serves over. The reading task ends when the stream does or the stream half is dropped.
    ///
    /// # Cancel safety
    ///
    /// Cancel safe: dropping the future drops the request and the connection.
    pub(crate) async fn connect(server: &HttpServer) -> Result<(Outgoing, Incoming), ProbeError> {
        let handshake = |message: String| ProbeError::Handshake {
            message,
            stderr: String::new(),
        };
        let client = crate::probe::http_client()?;
        let (headers, bearer) = crate::probe::headers(server)?;
        let header_map: http::HeaderMap = headers.into_iter().collect();
        let base =
            reqwest::Url::parse(&server.url).map_err(|e| handshake(format!("invalid URL: {e}")))?;
        let mut get = client
            .get(base.clone())
            .headers(header_map.clone())
            .header(http::header::ACCEPT, "text/event-stream");
        if let Some(token) = &bearer {
            get = get.bearer_auth(token);
        }
        let response = get
            .send()
            .await
            .map_err(|e| handshake(format!("GET {}: {}", base.path(), without_url(&e))))?;
        if !response.status().is_success() {
            return Err(handshake(format!(
                "GET {} answered HTTP {}",
                base.path(),
                response.status()
            )));
        }
        let mut events = Box::pin(sse_stream::SseStream::from_bytes_stream(
            response.bytes_stream(),
        ));
        let endpoint = loop {
            match events.next().await {
                Some(Ok(event)) if event.event.as_deref() == Some("endpoint") => {
                    let data = event.data.unwrap_or_default();
                    break base
                        .join(data.trim())
                        .map_err(|e| handshake(format!("bad endpoint event {data:?}: {e}")))?;
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => return Err(handshake(format!("event stream: {e}"))),
                None => {
                    return Err(handshake(
                        "the event stream ended before its endpoint event".into(),
                    ));
                }
            }
        };
        let (tx, rx) = tokio::sync::mpsc::channel(32);
        // Reads the stream until it ends or the client drops its half (then the GET
        // connection is dropped with it).
        tokio::spawn(async move {
            loop {
                let event = tokio::select! {
                    () = tx.closed() => break,
                    event = events.next() => event,
                };
                let Some(Ok(event)) = event else { break };
                if event.event.as_deref().is_some_and(|e| e != "message") {
                    continue;
                }
                let Some(data) = event.data else { continue };
                let Ok(message) = serde_json::from_str(&data) else {
                    continue;
                };
                if tx.send(message).await.is_err() {
                    break;
                }
            }
        });
        let incoming: Incoming = Box::pin(futures_util::stream::unfold(rx, |mut rx| async {
            rx.recv().await.map(|message| (message, rx))
        }));
        let outgoing: Outgoing = Box::pin(futures_util::sink::unfold(
            (client, endpoint, header_map, bearer),
            |(client, endpoint, headers, bearer), message: TxJsonRpcMessage<RoleClient>| async move {
                let mut post = client
                    .post(endpoint.clone())
                    .headers(headers.clone())
                    .header(http::header::CONTENT_TYPE, "application/json")
                    .body(
                        serde_json::to_vec(&message)
                            .map_err(|e| SseError(format!("cannot encode a message: {e}")))?,
                    );
                if let Some(token) = &bearer {
                    post = post.bearer_auth(token);
                }
                let response = post
                    .send()
                    .await
                    .map_err(|e| SseError(format!("POST: {}", without_url(&e))))?;
                if !response.status().is_success() {
                    return Err(SseError(format!(
                        "POST answered HTTP {}",
                        response.status()
                    )));
                }
                Ok((client, endpoint, headers, bearer))
            },
        ));
        Ok((outgoing, incoming))
    }
}

/// A reqwest error without its URL (a query string can hold a token).
fn without_url(error: &reqwest::Error) -> String {
    let mut text = error.to_string();
    if let Some(url) = error.url() {
        text = text.replace(url.as_str(), "<url>");
    }
    let mut source = std::error::Error::source(error);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}
