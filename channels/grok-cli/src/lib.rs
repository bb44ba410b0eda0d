//! The community Grok CLI channel (`@vibe-kit/grok-cli` 0.0.34, provider key `grok-cli`; the
//! key `grok` is xAI's own CLI over ACP).
//!
//! How it runs the CLI (facts: `shared/reference/real-clis-openai.md` §5):
//!
//! ```text
//! grok-cli --prompt=<message> [--model=<m>]        (stdin /dev/null, cwd = the request's)
//! ```
//!
//! * **binary**: the package's executable is called `grok`, the name of xAI's CLI. The bridge
//!   never runs a bare `grok` it cannot tell apart: it looks for `VIBE_GROK_BIN` /
//!   `VIBE_GROK_PATH`, then `grok-cli` on PATH and in the usual install dirs, and last for a
//!   `grok` on PATH that is a link into `node_modules/@vibe-kit/grok-cli/` (what
//!   `npm i -g @vibe-kit/grok-cli` creates). `tests/install-clis.sh` installs it as `grok-cli`
//!   in a bin dir of its own;
//! * the prompt is an argument (`--prompt=<text>`, joined so a prompt starting with `-` stays
//!   a value): headless mode has no other input;
//! * `baseUrl` → `GROK_BASE_URL`, `apiKey` → `GROK_API_KEY`, for the child only (never
//!   `--api-key` / `--base-url`: the CLI saves those into `~/.grok/user-settings.json`);
//! * `agentPrompt` is appended to the message (`## Agent Role and Instructions`, as the plugin
//!   does for CLIs without a system-prompt flag);
//! * output is printed at exit only, whole messages, no session id and no thinking; the exit
//!   code is 0 after an API error, so the outcome is decided by [`GrokCliNormalizer`].
//!
//! What it cannot do, and what the channel does about it:
//!
//! | request | the CLI | the channel |
//! |---|---|---|
//! | `sessionId` (resume) | no sessions | fails the turn, saying so |
//! | `permissionMode` `sandbox` / `plan` | every operation auto-approved, no restriction | fails the turn ([`permission_mapper::grok_cli`]) |
//! | `permissionMode` `default` / `acceptEdits` | same | runs, with a `permission_mode` warning |
//! | `reasoningEffort`, `disableThinking` | reasoning dropped | warning, ignored |
//! | `attachments` | text prompt only | warning, ignored |
//! | streaming | prints at exit | whole messages ([`bridge_core::event::Event::Text`]) |

#![deny(missing_docs)]

pub mod normalize;

use std::path::{Path, PathBuf};

use bridge_core::event::Event;
use bridge_core::process::{CommandSpec, StdinMode};
use bridge_core::request::Request;
use bridge_core::turn::{CloseStdin, ProcessTurn};
use bridge_one_shot::{BuildError, OneShot, OneShotChannel, OneShotTurn, set_endpoint_env};
use permission_mapper::RequestedMode;
use sdk_probe::{AuthSource, ProbeEnv, ProbeSpec, Version, VersionRange};

pub use normalize::GrokCliNormalizer;

/// Provider key.
pub const ID: &str = "grok-cli";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "@vibe-kit/grok-cli";

/// Where the package's `grok` executable points (how a bare `grok` is recognised as this CLI).
pub const PACKAGE_DIR_MARKER: &str = "node_modules/@vibe-kit/grok-cli/";

/// What `bridge system status` and the error path need to know about this CLI.
///
/// The tested range is what `--version` prints: package 0.0.34 reports `1.0.1`.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["VIBE_GROK_BIN", "VIBE_GROK_PATH"],
    tested: Some(VersionRange::exactly(Version::new(1, 0, 1))),
    install_hint: "npm i -g @vibe-kit/grok-cli@0.0.34 && ln -s \"$(npm prefix -g)/bin/grok\" ~/.local/bin/grok-cli",
    auth: &[
        AuthSource::Env("GROK_API_KEY"),
        AuthSource::File(".grok/user-settings.json"),
    ],
    ..ProbeSpec::new(
        ID,
        "Grok CLI (community, @vibe-kit/grok-cli)",
        &["grok-cli"],
    )
};

/// grok-cli on the one-shot engine, found by [`resolve_cli`].
pub const ONE_SHOT: OneShot = OneShot {
    locate: |_, env| resolve_cli(env),
    // No sessions: a `bridge grok-cli session` starts every turn afresh, and says so.
    resumes: false,
    ..OneShot::new(PROBE, build)
};

/// The channel.
pub fn channel() -> OneShotChannel {
    OneShotChannel::new(&ONE_SHOT)
}

fn build(program: PathBuf, request: &Request, _env: &ProbeEnv) -> Result<OneShotTurn, BuildError> {
    let (turn, warnings) = build_turn(program, request)?;
    Ok(OneShotTurn {
        warnings,
        ..OneShotTurn::new(turn, Box::new(GrokCliNormalizer::new()))
    })
}

/// Whether `path` (a `grok` found on PATH) is this package's executable: it resolves into
/// [`PACKAGE_DIR_MARKER`].
pub fn is_vibe_kit_grok(path: &Path) -> bool {
    std::fs::canonicalize(path)
        .map(|real| real.to_string_lossy().contains(PACKAGE_DIR_MARKER))
        .unwrap_or(false)
}

/// Where the CLI is: [`PROBE`]'s search (`VIBE_GROK_BIN`, `VIBE_GROK_PATH`, `grok-cli`), then a
/// `grok` on PATH that is this package's (see [`is_vibe_kit_grok`]).
pub fn resolve_cli(env: &ProbeEnv) -> Result<sdk_probe::Located, String> {
    let error = match sdk_probe::locate(&PROBE, env) {
        Ok(located) => return Ok(located),
        Err(error) => error,
    };
    let cwd = env.cwd().to_path_buf();
    if let Some(path) = env.path()
        && let Ok(found) = which::which_in_all("grok", Some(path), &cwd)
    {
        for candidate in found {
            if is_vibe_kit_grok(&candidate) {
                return Ok(sdk_probe::Located {
                    resolved: sdk_probe::Resolved {
                        path: candidate,
                        source: sdk_probe::Source::Path,
                    },
                    warnings: Vec::new(),
                });
            }
        }
    }
    Err(format!(
        "{error}; a `grok` on PATH is only used when it is a link into {PACKAGE_DIR_MARKER} (xAI's CLI is also called `grok`)"
    ))
}

/// The longest `--prompt=<message>` argument Linux accepts (`MAX_ARG_STRLEN`, 128 KiB, with
/// its terminating NUL): headless mode takes the prompt only as an argument.
pub const MAX_PROMPT_ARG_BYTES: usize = 128 * 1024 - 1;

/// Why a request cannot run on this CLI.
fn refuse(request: &Request, requested: &RequestedMode) -> Option<String> {
    if request.session_id.is_some() {
        return Some(
            "grok-cli cannot resume a conversation: it has no sessions (every turn starts a new \
             one); send the turn without sessionId"
                .into(),
        );
    }
    let effective = permission_mapper::grok_cli::effective(requested);
    if !effective.settings.runs {
        let why = effective
            .notes
            .last()
            .map(|n| n.message.clone())
            .unwrap_or_default();
        return Some(format!(
            "permission mode {} cannot be honoured: {why}",
            requested.mode
        ));
    }
    None
}

/// Builds the process for one turn, plus warnings about what could not be honoured exactly;
/// `Err` when the request cannot run on this CLI at all.
pub fn build_turn(
    program: PathBuf,
    request: &Request,
) -> Result<(ProcessTurn, Vec<Event>), String> {
    let requested = RequestedMode::from_option(request.permission_mode.as_deref());
    if let Some(reason) = refuse(request, &requested) {
        return Err(reason);
    }
    let mut warnings: Vec<Event> = permission_mapper::grok_cli::effective(&requested)
        .notes
        .into_iter()
        .map(|n| Event::warning("permission_mode", n.message))
        .collect();
    if request.reasoning_effort.is_some() || request.disable_thinking {
        warnings.push(Event::warning(
            "reasoning_effort",
            "grok-cli has no reasoning settings (and drops the model's reasoning); ignored",
        ));
    }
    if !request.attachments.is_empty() {
        warnings.push(Event::warning(
            "attachment_skipped",
            format!(
                "grok-cli takes a text prompt only; {} attachment(s) ignored",
                request.attachments.len()
            ),
        ));
    }
    let message = request.message_with_agent_prompt();
    let prompt = format!("--prompt={message}");
    if prompt.len() > MAX_PROMPT_ARG_BYTES {
        return Err(format!(
            "grok-cli takes the prompt as a command-line argument, which is limited to {} bytes; \
             this prompt (with agentPrompt) is {} bytes",
            MAX_PROMPT_ARG_BYTES - "--prompt=".len(),
            message.len()
        ));
    }
    let mut command = CommandSpec::new(program);
    command.arg(prompt);
    if let Some(model) = &request.model {
        command.arg(format!("--model={model}"));
    }
    set_endpoint_env(&mut command, request, "GROK_BASE_URL", "GROK_API_KEY");
    command.cwd = request.cwd.clone();
    command.stdin = StdinMode::Null;
    let turn = ProcessTurn {
        provider: ID.into(),
        command,
        stdin_payload: Vec::new(),
        close_stdin: CloseStdin::AfterPayload,
        interrupt_payload: None,
        responder: None,
        deferred: None,
    };
    Ok((turn, warnings))
}

#[cfg(test)]
mod tests {
    use std::ffi::OsString;

    use serde_json::json;

    use super::*;

    fn build(request: serde_json::Value) -> Result<(ProcessTurn, Vec<Event>), String> {
        build_turn(
            "/opt/grok-cli".into(),
            &Request::from_value(request).unwrap(),
        )
    }

    fn codes(warnings: &[Event]) -> Vec<&str> {
        warnings
            .iter()
            .filter_map(|e| match e {
                Event::Warning { code, .. } => Some(code.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_prompt_is_one_joined_argument_and_keys_go_to_the_environment() {
        let (turn, warnings) = build(json!({
            "message": "--help me", "model": "grok-4", "cwd": "/tmp",
            "baseUrl": "http://127.0.0.1:1/v1", "apiKey": "sk-canary",
            "permissionMode": "bypassPermissions",
        }))
        .unwrap();
        let args: Vec<String> = turn
            .command
            .args
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(args, ["--prompt=--help me", "--model=grok-4"]);
        assert!(!args.iter().any(|a| a.contains("sk-canary")));
        assert!(
            turn.command
                .env
                .contains(&(OsString::from("GROK_API_KEY"), OsString::from("sk-canary")))
        );
        assert!(turn.command.env.contains(&(
            OsString::from("GROK_BASE_URL"),
            OsString::from("http://127.0.0.1:1/v1")
        )));
        assert_eq!(turn.command.stdin, StdinMode::Null);
        assert!(warnings.is_empty(), "{warnings:?}");
    }

    #[test]
    fn what_the_cli_cannot_do_is_refused_or_reported() {
        let error = build(json!({"message": "hi", "sessionId": "abc"})).unwrap_err();
        assert!(error.contains("no sessions"), "{error}");
        for mode in ["sandbox", "plan"] {
            let error = build(json!({"message": "hi", "permissionMode": mode})).unwrap_err();
            assert!(error.contains("no read-only mode"), "{error}");
        }
        let (turn, warnings) = build(json!({
            "message": "hi", "agentPrompt": "Be brief.", "reasoningEffort": "high",
            "attachments": [{"fileName": "a.png", "mediaType": "image/png", "data": "AAAA"}],
        }))
        .unwrap();
        assert_eq!(
            codes(&warnings),
            ["permission_mode", "reasoning_effort", "attachment_skipped"]
        );
        assert_eq!(
            turn.command.args[0],
            OsString::from("--prompt=hi\n\n## Agent Role and Instructions\n\nBe brief.")
        );
    }

    #[test]
    fn a_prompt_too_long_for_one_argument_is_refused_clearly() {
        let fits = "x".repeat(MAX_PROMPT_ARG_BYTES - "--prompt=".len());
        assert!(build(json!({"message": fits, "permissionMode": "yolo"})).is_ok());
        let error =
            build(json!({"message": format!("{fits}y"), "permissionMode": "yolo"})).unwrap_err();
        assert!(error.contains("command-line argument"), "{error}");
    }

    #[test]
    fn a_bare_grok_is_used_only_when_it_is_this_package() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("lib/node_modules/@vibe-kit/grok-cli/dist");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(package.join("index.js"), "#!/usr/bin/env node\n").unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        let other = dir.path().join("other");
        std::fs::create_dir_all(&other).unwrap();
        std::fs::write(other.join("grok"), "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let exec = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(package.join("index.js"), exec.clone()).unwrap();
            std::fs::set_permissions(other.join("grok"), exec).unwrap();
            std::os::unix::fs::symlink(package.join("index.js"), bin.join("grok")).unwrap();
        }
        let home = tempfile::tempdir().unwrap();
        let only_xai = ProbeEnv::empty()
            .with_home(home.path())
            .with_system_dirs(Vec::new())
            .with_path(other.as_os_str());
        let error = resolve_cli(&only_xai).unwrap_err();
        assert!(error.contains("grok-cli"), "{error}");
        let path = std::env::join_paths([&other, &bin]).unwrap();
        let both = only_xai.clone().with_path(path);
        let found = resolve_cli(&both).unwrap();
        assert_eq!(found.resolved.path, bin.join("grok"));
    }
}
