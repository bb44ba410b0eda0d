//! The [`Channel`] trait every provider implements, and the [`Router`] that finds them by key.
//!
//! A channel starts one turn for a [`Request`] and reports it as [`Event`]s through a
//! [`TurnContext`]. It must end every turn with exactly one [`Event::TurnEnd`]; the
//! process-based channels get that for free from [`crate::turn::run_process_turn`].

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::stream::{BoxStream, StreamExt};
use tokio::sync::mpsc;
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

    /// Runs one turn. The future completes after the turn's [`Event::TurnEnd`] was sent.
    fn send(&self, request: Request, ctx: TurnContext) -> BoxFuture<'static, ()>;
}

/// Options of [`stream_turn`].
#[derive(Debug, Clone, Default)]
pub struct StreamOptions {
    /// Deadlines.
    pub limits: TurnLimits,
    /// Include provider-native lines as [`Event::Raw`].
    pub raw: bool,
}

/// Runs one turn on `channel` and returns its events as a stream, for library users.
///
/// Cancel `cancel` to interrupt the turn; the stream still ends with [`Event::TurnEnd`].
/// Dropping the stream also stops the turn (its child process group is killed).
pub fn stream_turn(
    channel: Arc<dyn Channel>,
    request: Request,
    options: StreamOptions,
    cancel: CancellationToken,
) -> BoxStream<'static, Event> {
    let (events, receiver) = mpsc::channel(256);
    let ctx = TurnContext {
        raw: options.raw,
        ..TurnContext::new(events, cancel, options.limits)
    };
    tokio::spawn(channel.send(request, ctx));
    futures_util::stream::unfold(receiver, |mut receiver| async move {
        receiver.recv().await.map(|event| (event, receiver))
    })
    .boxed()
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
