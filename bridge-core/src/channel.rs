//! The [`Channel`] trait every provider implements, and the [`Router`] that finds them by key.
//!
//! A channel starts one turn for a [`Request`] and reports it as [`Event`]s through a
//! [`TurnContext`]. It must end every turn with exactly one [`Event::TurnEnd`]; the
//! process-based channels get that for free from the runner ([`crate::session`]).

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use tokio_util::sync::CancellationToken;

use crate::encode::MarkerDialect;
use crate::event::Event;
use crate::request::Request;
use crate::turn::{TurnContext, TurnLimits};

/// One provider (Claude Code, Codex, …).
pub trait Channel: Send + Sync {
    /// Provider key on the command line (`claude`).
    fn id(&self) -> &'static str;

    /// Human name (`Claude Code`).
    fn display_name(&self) -> &'static str;

    /// How this provider spells the marker protocol.
    fn dialect(&self) -> MarkerDialect {
        MarkerDialect::SESSION
    }

    /// Commands this channel accepts (`send`, `sendWithAttachments`, …).
    fn commands(&self) -> &'static [&'static str] {
        &["send", "sendWithAttachments"]
    }

    /// The query commands this channel answers besides its sends (`getSession`,
    /// `listModels`, …; see [`crate::query`]). None by default; `listModels` is answered for
    /// every channel anyway ([`crate::query::find`]).
    fn queries(&self) -> &'static [crate::query::Query] {
        &[]
    }

    /// Names of the transports a request may pick with `transport` (see [`Transports`]); empty
    /// for a channel with a single way to run its CLI.
    fn transports(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// Checks the request's `transport` against [`Channel::transports`] (matched ignoring case).
    fn check_transport(&self, request: &Request) -> Result<(), crate::request::RequestError> {
        let Some(transport) = &request.transport else {
            return Ok(());
        };
        let available = self.transports();
        if available.iter().any(|n| n.eq_ignore_ascii_case(transport)) {
            return Ok(());
        }
        Err(crate::request::RequestError::UnknownTransport {
            provider: self.display_name().to_string(),
            transport: transport.clone(),
            available: available.iter().map(|n| n.to_string()).collect(),
        })
    }

    /// Runs one turn. The future completes after the turn's [`Event::TurnEnd`] was sent.
    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()>;

    /// A conversation that keeps the CLI warm across turns, for a session whose first turn is
    /// `first`; `None` (the default) runs every turn as its own [`Channel::send`], resumed by
    /// the session id ([`crate::conversation::Respawn`]).
    fn conversation(&self, first: &Request) -> Option<Box<dyn crate::conversation::Conversation>> {
        let _ = first;
        None
    }

    /// Whether the CLI can resume a conversation by its session id (a session over a CLI that
    /// cannot starts every turn afresh, and says so).
    fn resumes(&self) -> bool {
        true
    }

    /// Which MCP server transports the channel passes on to its CLI ([`Request::mcp_servers`]);
    /// the others are dropped with a warning. None by default.
    fn mcp_support(&self) -> crate::request::McpSupport {
        crate::request::McpSupport::default()
    }

    /// Whether image attachments ([`Request::attachments`]) reach the model as images. `false`
    /// by default: such a channel drops them (with a warning) or sends them as files.
    fn takes_images(&self) -> bool {
        false
    }
}

/// Options of [`stream_turn`].
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Deadlines.
    pub limits: TurnLimits,
    /// Include provider-native lines as [`Event::Raw`].
    pub raw: bool,
}

/// Runs one turn on `channel` and returns its events as a stream, for library users: a
/// [`crate::conversation::Session`] with one turn, so the same guarantees as `bridge <provider>
/// send` hold (request validation, turn start first, one error before a failed end, exactly
/// one turn end). Must be called inside a tokio runtime.
///
/// Cancel `cancel` to interrupt the turn; the stream still ends with [`Event::TurnEnd`].
/// Dropping the stream also stops the turn (its child process group is killed).
pub fn stream_turn(
    channel: Arc<dyn Channel>,
    request: Request,
    options: StreamOptions,
    cancel: CancellationToken,
) -> BoxStream<'static, Event> {
    let session = crate::conversation::Session::open(
        channel,
        crate::conversation::SessionOptions {
            limits: options.limits,
            raw: options.raw,
            ..Default::default()
        },
    );
    let events = session.turn(Ok(request), cancel);
    // Closes after the turn (the worker runs its jobs in order).
    tokio::spawn(async move { session.close().await });
    events
}

/// A provider reachable through more than one transport: for example its ACP server (the
/// default, with interactive approvals) and its one-shot JSON print mode.
///
/// The request's `transport` field (`bridge <provider> send --transport json`) picks one by
/// name; without it the default runs, unless the provider's [`Route`] (set with
/// [`Transports::route`]) sends the request elsewhere — for example a resumed turn when the
/// default cannot resume — and then a `transport` warning says why.
///
/// ```
/// use std::sync::Arc;
/// use bridge_core::channel::{Channel, Transports};
/// # use bridge_core::{request::Request, turn::TurnContext};
/// # use futures_util::future::BoxFuture;
/// # struct Acp; struct Json;
/// # impl Channel for Acp { fn id(&self) -> &'static str { "demo" } fn display_name(&self) -> &'static str { "Demo" }
/// #   fn send(&self, _: Request, _: TurnContext) -> BoxFuture<'static, ()> { Box::pin(async {}) } }
/// # impl Channel for Json { fn id(&self) -> &'static str { "demo" } fn display_name(&self) -> &'static str { "Demo" }
/// #   fn send(&self, _: Request, _: TurnContext) -> BoxFuture<'static, ()> { Box::pin(async {}) } }
/// let demo = Transports::new("acp", Arc::new(Acp)).with("json", Arc::new(Json));
/// assert_eq!(demo.names(), ["acp", "json"]);
/// assert_eq!(demo.id(), "demo");
/// ```
#[derive(Clone)]
pub struct Transports {
    transports: Vec<(&'static str, Arc<dyn Channel>)>,
    route: Option<Route>,
    queries: Option<&'static [crate::query::Query]>,
}

/// Where a request that names no transport goes instead of the default: the transport's name
/// and why (told to the client as a `transport` warning; an empty reason routes silently, for a
/// choice the user made, such as an environment variable), or `None` for the default.
pub type Route = fn(&Request) -> Option<(&'static str, String)>;

impl Transports {
    /// A provider whose default transport is `channel`, called `name`.
    pub fn new(name: &'static str, channel: Arc<dyn Channel>) -> Self {
        Transports {
            transports: vec![(name, channel)],
            route: None,
            queries: None,
        }
    }

    /// Answers `queries` (the provider's, whichever transport its sends take); without this
    /// the default transport's queries.
    pub fn queries(mut self, queries: &'static [crate::query::Query]) -> Self {
        self.queries = Some(queries);
        self
    }

    /// Adds another transport.
    pub fn with(mut self, name: &'static str, channel: Arc<dyn Channel>) -> Self {
        self.transports.push((name, channel));
        self
    }

    /// Sends requests that name no transport where `route` says (see [`Route`]).
    pub fn route(mut self, route: Route) -> Self {
        self.route = Some(route);
        self
    }

    /// Transport names, the default first.
    pub fn names(&self) -> Vec<&'static str> {
        self.transports.iter().map(|(name, _)| *name).collect()
    }

    /// The transport called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Channel>> {
        self.transports
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, channel)| channel)
    }

    fn default_channel(&self) -> &Arc<dyn Channel> {
        &self.transports[0].1
    }
}

impl Channel for Transports {
    fn id(&self) -> &'static str {
        self.default_channel().id()
    }

    fn display_name(&self) -> &'static str {
        self.default_channel().display_name()
    }

    fn dialect(&self) -> MarkerDialect {
        self.default_channel().dialect()
    }

    fn commands(&self) -> &'static [&'static str] {
        self.default_channel().commands()
    }

    fn queries(&self) -> &'static [crate::query::Query] {
        self.queries
            .unwrap_or_else(|| self.default_channel().queries())
    }

    fn transports(&self) -> Vec<&'static str> {
        self.names()
    }

    fn conversation(&self, first: &Request) -> Option<Box<dyn crate::conversation::Conversation>> {
        match first.transport.as_deref() {
            Some(name) => self.get(name)?.conversation(first),
            None if self.route.and_then(|route| route(first)).is_some() => None,
            None => self.default_channel().conversation(first),
        }
    }

    fn resumes(&self) -> bool {
        self.default_channel().resumes()
    }

    fn mcp_support(&self) -> crate::request::McpSupport {
        self.default_channel().mcp_support()
    }

    fn takes_images(&self) -> bool {
        self.default_channel().takes_images()
    }

    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()> {
        let chosen = match request.transport.as_deref() {
            Some(name) => match self.get(name) {
                Some(channel) => Ok((channel.clone(), None)),
                None => Err(format!(
                    "unknown transport `{name}` for {}; available: {}",
                    self.display_name(),
                    self.names().join(", ")
                )),
            },
            None => match self.route.and_then(|route| route(&request)) {
                Some((name, why)) => match self.get(name) {
                    Some(channel) => Ok((channel.clone(), Some(why))),
                    None => Err(format!(
                        "{} routes this request to the transport `{name}`, which it does not have",
                        self.display_name()
                    )),
                },
                None => Ok((self.default_channel().clone(), None)),
            },
        };
        Box::pin(async move {
            match chosen {
                Ok((channel, warning)) => {
                    if let Some(message) = warning.filter(|m| !m.is_empty()) {
                        ctx.emit(Event::warning("transport", message)).await;
                    }
                    channel.send(request, ctx).await;
                }
                Err(message) => {
                    let info = crate::event::ErrorInfo::new(
                        crate::event::ErrorCode::InvalidRequest,
                        message,
                    );
                    ctx.fail(info, request.session_id.clone()).await;
                }
            }
        })
    }
}

impl std::fmt::Debug for Transports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transports")
            .field("names", &self.names())
            .field("route", &self.route.is_some())
            .finish()
    }
}

/// The provider registry.
#[derive(Clone, Default)]
pub struct Router {
    channels: Vec<Arc<dyn Channel>>,
}

impl Router {
    /// An empty router.
    pub fn new() -> Self {
        Router::default()
    }

    /// Registers a channel (a later one with the same id replaces the earlier).
    pub fn with(mut self, channel: Arc<dyn Channel>) -> Self {
        self.channels.retain(|c| c.id() != channel.id());
        self.channels.push(channel);
        self
    }

    /// The channel for `id`.
    pub fn get(&self, id: &str) -> Option<Arc<dyn Channel>> {
        self.channels.iter().find(|c| c.id() == id).cloned()
    }

    /// All registered provider keys, in registration order.
    pub fn ids(&self) -> Vec<&'static str> {
        self.channels.iter().map(|c| c.id()).collect()
    }

    /// All registered channels.
    pub fn channels(&self) -> &[Arc<dyn Channel>] {
        &self.channels
    }
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("channels", &self.ids())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::{ErrorCode, StopReason, TurnEnd};
    use futures_util::stream::StreamExt;

    /// A transport that answers with its own name as the turn's result.
    struct Named(&'static str);

    impl Channel for Named {
        fn id(&self) -> &'static str {
            "demo"
        }
        fn display_name(&self) -> &'static str {
            "Demo"
        }
        fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()> {
            let name = self.0;
            Box::pin(async move {
                ctx.emit(Event::TurnEnd(TurnEnd {
                    success: true,
                    stop_reason: StopReason::EndTurn,
                    session_id: request.session_id,
                    result: Some(name.to_string()),
                    error: None,
                }))
                .await;
            })
        }
    }

    fn demo() -> Arc<dyn Channel> {
        Arc::new(
            Transports::new("acp", Arc::new(Named("acp")))
                .with("json", Arc::new(Named("json")))
                .route(|request| {
                    request
                        .session_id
                        .as_ref()
                        .map(|_| ("json", "acp cannot load sessions".to_string()))
                }),
        )
    }

    async fn run(request: serde_json::Value) -> Vec<Event> {
        let request = Request::from_value(request).unwrap();
        let stream = stream_turn(
            demo(),
            request,
            StreamOptions::default(),
            CancellationToken::new(),
        );
        stream.collect().await
    }

    fn result(events: &[Event]) -> Option<&str> {
        events.iter().find_map(|e| match e {
            Event::TurnEnd(end) => end.result.as_deref(),
            _ => None,
        })
    }

    #[tokio::test]
    async fn the_default_runs_unless_a_transport_is_named() {
        assert_eq!(
            result(&run(serde_json::json!({"message": "hi"})).await),
            Some("acp")
        );
        let named = run(serde_json::json!({"message": "hi", "transport": "JSON"})).await;
        assert_eq!(result(&named), Some("json"));
        assert!(!named.iter().any(|e| matches!(e, Event::Warning { .. })));
    }

    #[tokio::test]
    async fn a_resume_goes_through_the_resume_transport_and_says_why() {
        let events = run(serde_json::json!({"message": "hi", "sessionId": "abc"})).await;
        assert_eq!(result(&events), Some("json"));
        assert!(events.iter().any(|e| matches!(
            e,
            Event::Warning { code, message } if code == "transport" && message.contains("acp cannot load sessions")
        )));
        // Naming the transport wins over the resume rule.
        let events =
            run(serde_json::json!({"message": "hi", "sessionId": "abc", "transport": "acp"})).await;
        assert_eq!(result(&events), Some("acp"));
    }

    #[tokio::test]
    async fn an_unknown_transport_fails_the_turn_and_lists_the_known_ones() {
        let events = run(serde_json::json!({"message": "hi", "transport": "carrier-pigeon"})).await;
        let error = events.iter().find_map(|e| match e {
            Event::Error(info) => Some(info.clone()),
            _ => None,
        });
        let error = error.expect("an error event");
        assert_eq!(error.code, ErrorCode::InvalidRequest);
        assert!(error.message.contains("carrier-pigeon") && error.message.contains("acp, json"));
        assert!(matches!(events.last(), Some(Event::TurnEnd(end)) if !end.success));
    }

    #[test]
    fn a_transport_the_provider_lacks_is_an_invalid_request_naming_the_choices() {
        let request = |t: &str| Request {
            transport: Some(t.to_string()),
            ..Request::from_prompt("hi")
        };
        assert_eq!(demo().check_transport(&request("Json")), Ok(()));
        let error = demo().check_transport(&request("pigeon")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "request field `transport`: Demo has no transport `pigeon` (available: acp, json)"
        );
        // A channel with one way to run its CLI has no transports to pick.
        let error = Named("acp").check_transport(&request("acp")).unwrap_err();
        assert!(
            error.to_string().contains("it has one way to run its CLI"),
            "{error}"
        );
        assert_eq!(
            Named("acp").check_transport(&Request::from_prompt("hi")),
            Ok(())
        );
    }
}
