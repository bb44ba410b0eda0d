//! The Claude stream-json normalizer fed arbitrary lines: never panics, and everything it
//! emits encodes to valid wire lines (see `common.rs`).
#![no_main]

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use bridge_channel_claude::ClaudeNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::turn::Normalizer;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut normalizer = ClaudeNormalizer::new();
    let mut events = Vec::new();
    for line in text.split('\n') {
        normalizer.line(line, &mut events);
    }
    normalizer.finish(Some(&ExitStatus::from_raw(0)), &mut events);
    let _ = normalizer.session_id();
    common::check_events(&events, MarkerDialect::SESSION);
});
