//! The Codex engine: what the bridge knows about Codex's protocols (`codex exec --json` and
//! `codex app-server`), whichever provider launches the CLI.
//!
//! * [`normalize::CodexNormalizer`] turns `exec --json` lines into events;
//! * [`rollout`] finds and reads the thread's rollout file for what `exec --json` leaves out;
//!   [`RolloutReader`] is the engine side that reads it during a turn and pushes what it read
//!   into the pure normalizer;
//! * [`patch`] parses `apply_patch` input into diffs, [`command`] turns shell commands into
//!   tool cards;
//! * [`history`] reads a thread's history and the threads Codex keeps back from the rollout
//!   files (`getSession`, `listSessions`);
//! * [`native`] finds the native binary behind the npm shim;
//! * [`app_server`] is the other transport, `codex app-server` (JSON-RPC, approvals, warm
//!   threads), whose items it maps onto the same cards.
//!
//! The launch (argv, env, tested versions, permission mapping) is provider data and lives in
//! `bridge-channel-codex`.

#![deny(missing_docs)]

pub mod app_server;
pub mod command;
pub mod history;
pub mod native;
pub mod normalize;
pub mod patch;
pub mod rollout;

pub use native::NativeCodex;
pub use normalize::CodexNormalizer;

use std::path::PathBuf;

use bridge_core::event::Event;
use bridge_core::session::{Engine, EngineIo};
use bridge_core::turn::Normalizer;

use crate::rollout::RolloutFollower;

/// How many stdout lines may pass before the bridge gives up looking for the file.
const MAX_OPEN_ATTEMPTS: u32 = 64;

/// The engine's reading of the thread's rollout file, around the pure [`CodexNormalizer`]: the
/// normalizer the Codex channel hands the process runner.
///
/// Before each stdout line (and at the end of the stream) it reads what the rollout gained
/// ([`RolloutFollower`]) and pushes those lines into the normalizer
/// ([`CodexNormalizer::rollout_line`]); after each line it looks for the file once the thread
/// id is known. The normalizer itself does no I/O: this is the engine (a
/// [`bridge_core::session::Engine`] on the session runner) that does it.
#[derive(Debug)]
pub struct RolloutReader {
    inner: CodexNormalizer,
    follower: RolloutFollower,
    resumed: bool,
    attempts: u32,
}

impl RolloutReader {
    /// Wraps `inner`; `resumed` says whether the thread existed before this turn (its earlier
    /// rollout lines are then read as history).
    pub fn new(inner: CodexNormalizer, codex_home: impl Into<PathBuf>, resumed: bool) -> Self {
        RolloutReader {
            inner,
            follower: RolloutFollower::new(codex_home),
            resumed,
            attempts: 0,
        }
    }

    fn drain(&mut self, historic: bool, out: &mut Vec<Event>) {
        let inner = &mut self.inner;
        self.follower
            .read_lines(|line| inner.rollout_line(line, historic, out));
    }

    fn try_open(&mut self, out: &mut Vec<Event>) {
        if self.follower.is_open() || self.attempts >= MAX_OPEN_ATTEMPTS {
            return;
        }
        let Some(thread_id) = self.inner.session_id() else {
            return;
        };
        self.attempts += 1;
        if self.follower.open(&thread_id) {
            // A resumed thread's file already holds the earlier turns: read them as history.
            let historic = self.resumed;
            self.drain(historic, out);
            if historic {
                self.inner.rollout_history_done();
            }
        } else if self.resumed {
            // Codex itself needs this file to resume; if it is not where we look, stop looking.
            self.attempts = MAX_OPEN_ATTEMPTS;
        }
    }
}

impl Engine for RolloutReader {
    fn stdout_line(&mut self, line: &str, io: &mut EngineIo) {
        let out = io.events();
        self.drain(false, out);
        self.inner.line(line, out);
        self.try_open(out);
    }

    fn stderr_line(&mut self, line: &str, io: &mut EngineIo) {
        self.inner.stderr_line(line, io.events());
    }

    fn session_id(&self) -> Option<String> {
        self.inner.session_id()
    }

    fn finish(&mut self, exit: Option<&std::process::ExitStatus>, io: &mut EngineIo) {
        let out = io.events();
        self.drain(false, out);
        self.inner.finish(exit, out);
    }

    fn turn_complete(&self) -> bool {
        self.inner.turn_complete()
    }
}
