//! The oh-my-pi channel (`omp`, `@oh-my-pi/pi-coding-agent`): pi's event stream, launch and
//! normalizer ([`bridge_pi_family`]) with omp's own flags.
//!
//! ```text
//! omp --print --mode json [--model=<m>] [--resume=<id>] [--thinking=<level>]
//!     [--approval-mode <mode>] [--tools <list>] [--append-system-prompt=<file>] [@<file>…]  < prompt
//! ```
//!
//! * omp's launcher is `#!/usr/bin/env bun`: it needs **bun ≥ 1.3.14** (npm package `bun`).
//!   When `bun` is not on PATH but in `~/.bun/bin` or next to `omp`, that directory is put in
//!   front of the child's PATH; when it is nowhere the turn fails saying how to install it;
//! * binary: `OMP_BIN` / `OMP_PATH` / `OMP_CLI_PATH`, then PATH, `~/.omp/bin`, `~/.bun/bin`;
//! * values are written `--flag=value` (omp's parser: `--resume` alone opens a picker, so the
//!   id must be joined to it); resume is `--resume=<session id>`, an unknown id exits 1 with
//!   `Session "…" not found.`;
//! * thinking levels: off, minimal, low, medium, high, xhigh, max;
//! * permissions: omp's tiered approvals ([`permission_mapper::omp`]): read-only modes get
//!   `--approval-mode always-ask --tools read,grep,glob`, bypass/yolo get
//!   `--approval-mode yolo`, the everyday modes keep omp's configured mode (print mode cannot
//!   ask: what that mode does not auto-approve is refused), with a `permission_mode` warning;
//! * unlike pi, omp exits 1 after an API error; the stream decides either way.
//!
//! Tested with omp 18.2.3: the pinned 18.3.4 cannot be installed from the registry reachable
//! here (its `@oh-my-pi/*@18.3.4` dependencies are missing, npm `ETARGET`), so the installer
//! pins 18.2.3, the newest release whose dependencies all resolve.

#![deny(missing_docs)]

pub mod models;

use std::path::PathBuf;

use bridge_core::request::Request;
use bridge_one_shot::{BuildError, OneShot, OneShotChannel, OneShotTurn};
use bridge_pi_family::{Flavor, Permissions, Runtime, ValueStyle};
use permission_mapper::RequestedMode;
use sdk_probe::ProbeEnv;
use sdk_probe::{AuthSource, ProbeSpec, Version, VersionRange};

/// Provider key.
pub const ID: &str = "omp";

/// The npm package that installs the CLI.
pub const NPM_PACKAGE: &str = "@oh-my-pi/pi-coding-agent";

/// What `bridge system status` and the error path need to know about omp.
pub const PROBE: ProbeSpec = ProbeSpec {
    env_overrides: &["OMP_BIN", "OMP_PATH", "OMP_CLI_PATH"],
    install_dirs: &[".omp/bin", ".bun/bin"],
    tested: Some(VersionRange::exactly(Version::new(18, 2, 3))),
    install_hint: "npm i -g bun @oh-my-pi/pi-coding-agent",
    auth: &[
        AuthSource::File(".omp/agent/models.yml"),
        AuthSource::Env("OPENAI_API_KEY"),
        AuthSource::Env("ANTHROPIC_API_KEY"),
        AuthSource::Env("GEMINI_API_KEY"),
    ],
    ..ProbeSpec::new(ID, "oh-my-pi", &["omp"])
};

/// omp's permission flags: `--approval-mode` and its tool allowlist.
pub fn permissions(requested: &RequestedMode) -> Permissions {
    let effective = permission_mapper::omp::effective(requested);
    Permissions {
        args: effective.settings.args(),
        notes: effective.notes.into_iter().map(|n| n.message).collect(),
    }
}

/// bun, which omp's launcher runs on.
pub const BUN: Runtime = Runtime {
    binary: "bun",
    install_dirs: &[".bun/bin"],
    install_hint: "npm i -g bun@1.3.14",
};

/// How the bridge runs omp.
pub const FLAVOR: Flavor = Flavor {
    probe: PROBE,
    resume_flag: "--resume",
    values: ValueStyle::Joined,
    thinking_levels: &["off", "minimal", "low", "medium", "high", "xhigh", "max"],
    default_model_tokens: &["omp-default", "omp default"],
    env_defaults: &[],
    permissions,
    runtime: Some(BUN),
};

fn build(program: PathBuf, request: &Request, env: &ProbeEnv) -> Result<OneShotTurn, BuildError> {
    bridge_pi_family::launch::build_turn(&FLAVOR, program, request, env)
}

/// omp on the one-shot engine.
pub const ONE_SHOT: OneShot = OneShot::new(PROBE, build).with_queries(&[models::QUERY]);

/// The omp channel.
pub fn channel() -> OneShotChannel {
    OneShotChannel::new(&ONE_SHOT)
}

#[cfg(test)]
mod tests {
    use bridge_core::event::ErrorCode;
    use bridge_core::request::Request;
    use bridge_pi_family::launch::build_turn;
    use sdk_probe::ProbeEnv;
    use serde_json::json;

    use super::*;

    /// A directory with an executable `bun`.
    fn bun_dir() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let bun = dir.path().join("bun");
        std::fs::write(&bun, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&bun, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    fn args(request: serde_json::Value, env: &ProbeEnv) -> Vec<String> {
        let request = Request::from_value(request).unwrap();
        build_turn(&FLAVOR, "/opt/omp/omp".into(), &request, env)
            .unwrap()
            .args()
    }

    #[test]
    fn values_are_joined_and_resume_uses_the_session_id() {
        let bun = bun_dir();
        let env = ProbeEnv::empty().with_path(bun.path().as_os_str());
        let args = args(
            json!({
                "message": "hi", "model": "mock/mock-model", "sessionId": "01a2-x",
                "reasoningEffort": "max", "permissionMode": "sandbox",
            }),
            &env,
        );
        assert_eq!(
            args,
            [
                "--print",
                "--mode",
                "json",
                "--model=mock/mock-model",
                "--resume=01a2-x",
                "--thinking=max",
                "--approval-mode",
                "always-ask",
                "--tools",
                "read,grep,glob",
            ]
        );
        let args = self::args(
            json!({"message": "hi", "permissionMode": "bypassPermissions"}),
            &env,
        );
        assert_eq!(args[3..], ["--approval-mode", "yolo"]);
    }

    #[test]
    fn bun_off_path_is_put_in_front_of_the_child_path_and_missing_bun_is_an_error() {
        let home = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(home.path().join(".bun/bin")).unwrap();
        let bun = bun_dir();
        std::fs::rename(bun.path().join("bun"), home.path().join(".bun/bin/bun")).unwrap();
        let env = ProbeEnv::empty()
            .with_home(home.path())
            .with_path("/usr/bin");
        let request = Request::from_value(json!({"message": "hi"})).unwrap();
        let launch = build_turn(&FLAVOR, "/opt/omp/omp".into(), &request, &env).unwrap();
        let path = launch
            .turn
            .command
            .env
            .iter()
            .find(|(k, _)| k == "PATH")
            .map(|(_, v)| v.to_string_lossy().into_owned())
            .expect("PATH set for the child");
        assert_eq!(
            path,
            format!("{}:/usr/bin", home.path().join(".bun/bin").display())
        );

        let empty = tempfile::tempdir().unwrap();
        let env = ProbeEnv::empty()
            .with_home(empty.path())
            .with_path("/nonexistent");
        let error = build_turn(&FLAVOR, "/opt/omp/omp".into(), &request, &env).unwrap_err();
        assert_eq!(error.code, ErrorCode::CliNotFound);
        assert!(
            error.message.contains("npm i -g bun@1.3.14"),
            "{}",
            error.message
        );
    }
}
