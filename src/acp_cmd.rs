//! `bridge acp <provider>`: the provider as an Agent Client Protocol agent on stdin/stdout
//! (see the `bridge-acp-agent` crate).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use bridge::acp_agent::history::SessionMap;
use bridge::acp_agent::{AgentOptions, Ended, ProviderProfile, serve};
use tokio_util::sync::CancellationToken;

use crate::{Cli, base_redactor, install_signal_handlers, turn_limits};

/// Runs the agent until the client closes stdin (exit 0), a signal or the parent's death
/// (130), a closed stdout (1) or a handshake that never came (1). Usage errors go to stderr:
/// stdout belongs to the protocol.
pub(crate) fn run_acp(cli: Cli) -> ExitCode {
    let router = bridge::router();
    let Some(provider) = cli.command.clone() else {
        eprintln!(
            "usage: bridge acp <provider>\nproviders: {}",
            router.ids().join(", ")
        );
        return ExitCode::from(2);
    };
    let Some(channel) = router.get(&provider) else {
        eprintln!(
            "bridge acp: unknown provider {provider}; valid providers: {}",
            router.ids().join(", ")
        );
        return ExitCode::from(2);
    };
    die_with_parent();
    let runtime = match crate::runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let sessions = session_map();
    let mut options = AgentOptions {
        profile: profile(&*channel, sessions.is_some()),
        sessions,
        limits: turn_limits(&cli),
        approval_timeout: Duration::from_secs(cli.approval_timeout),
        redactor: base_redactor(),
        version: env!("CARGO_PKG_VERSION"),
        model: cli.model.clone(),
        // The session's CLI starts at `initialize` in the agent's directory (where IDEs start
        // it and open the first session); `BRIDGE_ACP_PRESTART=0` waits for `session/new`.
        prestart: std::env::var("BRIDGE_ACP_PRESTART")
            .map_or(true, |v| v.trim() != "0")
            .then(|| std::env::current_dir().ok())
            .flatten(),
        ..AgentOptions::default()
    };
    // How long the client may take to send `initialize` (seconds).
    if let Some(secs) = std::env::var("BRIDGE_ACP_HANDSHAKE_TIMEOUT")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        options.handshake_timeout = Duration::from_secs(secs);
    }
    let ended = runtime.block_on(async {
        let stop = CancellationToken::new();
        install_signal_handlers(stop.clone());
        serve(
            Arc::clone(&channel),
            options,
            tokio::io::stdin(),
            tokio::io::stdout(),
            stop,
        )
        .await
    });
    // The stdin reader blocked on an open pipe is not waited for.
    runtime.shutdown_timeout(Duration::from_millis(500));
    match ended {
        Ended::StdinClosed => ExitCode::SUCCESS,
        Ended::Stopped => ExitCode::from(130),
        Ended::StdoutClosed => ExitCode::from(1),
        Ended::HandshakeTimeout => {
            eprintln!("bridge acp: no `initialize` from the client in time");
            ExitCode::from(1)
        }
    }
}

/// What `initialize` advertises for `channel`: `session/load` where its history is readable
/// (a `getSession` query: Claude's session files, Codex's rollouts) and the session map can be kept,
/// `session/list` where it can also list them (`listSessions`); embedded text resources
/// everywhere (they are sent as text); images for Claude.
fn profile(channel: &dyn bridge::core::Channel, map_kept: bool) -> ProviderProfile {
    ProviderProfile {
        load_session: map_kept && bridge::core::query::find(channel, "getSession").is_some(),
        // Listed sessions are ones `session/load` can open.
        list_sessions: map_kept
            && bridge::core::query::find(channel, "getSession").is_some()
            && bridge::core::query::find(channel, "listSessions").is_some(),
        image: channel.takes_images(),
        embedded_context: true,
    }
}

/// Where ACP sessions are paired with provider conversations: `BRIDGE_ACP_SESSIONS`, else
/// `$XDG_STATE_HOME/bridge/acp-sessions.jsonl`, else `~/.local/state/bridge/acp-sessions.jsonl`.
fn session_map() -> Option<SessionMap> {
    let non_empty = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    let path = non_empty("BRIDGE_ACP_SESSIONS")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            non_empty("XDG_STATE_HOME")
                .map(std::path::PathBuf::from)
                .or_else(|| {
                    non_empty("HOME").map(|home| std::path::Path::new(&home).join(".local/state"))
                })
                .map(|dir| dir.join("bridge/acp-sessions.jsonl"))
        })?;
    Some(SessionMap::new(path))
}

/// Asks the kernel for SIGTERM when the parent dies (the client that spawned the agent was
/// killed), which ends the agent like any signal: its sessions are closed, no CLI is left.
fn die_with_parent() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_PDEATHSIG takes a signal number and has no memory effects;
    // getppid has no preconditions.
    unsafe {
        let parent = libc::getppid();
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM);
        // The parent died before the request: nobody would send the signal.
        if libc::getppid() != parent {
            libc::raise(libc::SIGTERM);
        }
    }
}
