//! `bridge`: drive every coding-agent CLI as a subprocess and speak one protocol.
//!
//! This facade re-exports the workspace crates and registers the built-in providers:
//!
//! * [`core`] (`bridge-core`): the event model, wire encoders, request parsing, the
//!   [`core::Channel`] trait, and the process runner;
//! * [`permission_mapper`]: unified permission modes ⇄ each provider's settings;
//! * [`sdk_probe`]: is each CLI installed, where, which version;
//! * [`daemon`]: `bridge daemon`, the plugin's daemon protocol over many warm sessions;
//! * [`acp_agent`]: `bridge acp <provider>`, any provider as an ACP agent over stdio;
//! * [`claude`]: the Claude Code channel, and the Anthropic-compatible relays that run
//!   Claude Code against another vendor's endpoint ([`claude::relay`]): the built-in `minimax`
//!   and `zcode`, and the user-defined ones of `providers.toml` ([`relays`]);
//! * [`codex`]: the Codex channel;
//! * [`acp`]: the ACP client engine, and the ACP providers over it: [`gemini`], [`qwen`],
//!   [`copilot`], [`opencode`], [`kimi`], [`grok`];
//! * the one-shot providers: [`pi`], [`omp`] (oh-my-pi; both on the pi-family engine),
//!   [`grok_cli`] (the community Grok CLI).
//!
//! # Example: one turn as a stream of events
//!
//! ```no_run
//! use futures_util::StreamExt;
//! use bridge::core::channel::{stream_turn, StreamOptions};
//! use bridge::core::{Event, Request};
//!
//! # async fn run() {
//! let channel = bridge::router().get("claude").expect("registered");
//! let cancel = tokio_util::sync::CancellationToken::new();
//! let mut events = stream_turn(channel, Request::from_prompt("hi"), StreamOptions::default(), cancel);
//! while let Some(event) = events.next().await {
//!     if let Event::TextDelta { text } = &event {
//!         print!("{text}");
//!     }
//! }
//! # }
//! ```

#![deny(missing_docs)]

use std::sync::Arc;

pub mod relays;
pub mod system;

pub use bridge_acp as acp;
pub use bridge_acp_agent as acp_agent;
pub use bridge_channel_claude as claude;
pub use bridge_channel_codex as codex;
pub use bridge_channel_copilot as copilot;
pub use bridge_channel_gemini as gemini;
pub use bridge_channel_grok as grok;
pub use bridge_channel_grok_cli as grok_cli;
pub use bridge_channel_kimi as kimi;
pub use bridge_channel_omp as omp;
pub use bridge_channel_opencode as opencode;
pub use bridge_channel_pi as pi;
pub use bridge_channel_qwen as qwen;
pub use bridge_core as core;
pub use bridge_daemon as daemon;
pub use permission_mapper;
pub use sdk_probe;

/// The async runtime of every command: one thread (plus tokio's blocking pool). The bridge
/// waits on pipes and sockets and does little work per line, so a second worker buys nothing;
/// without the multi-thread scheduler the binary needs no libm either (its only `pow` call),
/// and `bridge acp`'s own memory is about 0.7 MiB smaller (`scripts/bench-acp.sh`).
pub fn async_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// What `bridge system status` probes: one spec per built-in provider, then one per
/// user-defined relay.
pub fn probe_specs() -> Vec<sdk_probe::ProbeSpec> {
    let mut specs = vec![
        claude::PROBE,
        codex::PROBE,
        gemini::PROBE,
        qwen::PROBE,
        copilot::PROBE,
        opencode::PROBE,
        kimi::PROBE,
        grok::PROBE,
        pi::PROBE,
        omp::PROBE,
        grok_cli::PROBE,
    ];
    specs.extend(relays_of_this_process().map(|relay| relay.probe()));
    specs
}

/// The built-in relays, then the valid user-defined ones.
fn relays_of_this_process() -> impl Iterator<Item = &'static claude::relay::ClaudeRelay> {
    let user: &'static [&'static claude::relay::ClaudeRelay] = match relays::user_relays() {
        Ok(relays) => relays,
        Err(_) => &[],
    };
    claude::relay::BUILT_IN.iter().chain(user).copied()
}

/// Ids a user-defined relay may not take: every built-in provider and the `system`, `schema`
/// and `daemon` commands.
pub fn built_in_ids() -> Vec<&'static str> {
    let mut ids = built_in_router().ids();
    ids.extend(["system", "schema", "daemon"]);
    ids
}

fn built_in_router() -> core::Router {
    let router = core::Router::new()
        .with(Arc::new(claude::ClaudeChannel::new()))
        .with(Arc::new(codex::channel()))
        .with(Arc::new(gemini::channel()))
        .with(Arc::new(qwen::channel()))
        .with(Arc::new(copilot::channel()))
        .with(Arc::new(opencode::channel()))
        .with(Arc::new(kimi::channel()))
        .with(Arc::new(grok::channel()))
        .with(Arc::new(pi::channel()))
        .with(Arc::new(omp::channel()))
        .with(Arc::new(grok_cli::channel()));
    claude::relay::BUILT_IN
        .iter()
        .fold(router, |router, relay| {
            router.with(Arc::new(claude::relay::RelayChannel::new(relay)))
        })
}

/// The router with every built-in provider registered, and the relays declared in
/// `providers.toml` ([`relays::user_relays`]; an invalid file registers none of them).
pub fn router() -> core::Router {
    let user: &'static [&'static claude::relay::ClaudeRelay] = match relays::user_relays() {
        Ok(relays) => relays,
        Err(_) => &[],
    };
    user.iter().fold(built_in_router(), |router, relay| {
        router.with(Arc::new(claude::relay::RelayChannel::new(relay)))
    })
}

/// The variables the relays read their keys from (their values are secrets to redact, even
/// when the name does not look like one).
pub fn relay_key_vars() -> Vec<&'static str> {
    relays_of_this_process().map(|r| r.key_env()).collect()
}
