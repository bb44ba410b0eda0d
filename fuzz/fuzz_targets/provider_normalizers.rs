//! The Codex, pi, grok-cli, gemini (`--output-format stream-json`), opencode (`run --format
//! json`), kimi (`--print`), copilot (`--output-format json`) and qwen (Claude stream-json, Qwen
//! dialect) normalizers fed arbitrary lines (the first byte picks one, and
//! whether the CLI "exited" 0, 1 or by a signal): never panics, and everything emitted encodes
//! to valid wire lines (see `common.rs`).
#![no_main]

use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;

use bridge_channel_claude::normalize::ClaudeNormalizer;
use bridge_channel_codex::normalize::CodexNormalizer;
use bridge_channel_copilot::normalize::CopilotNormalizer;
use bridge_channel_gemini::json::GeminiJsonNormalizer;
use bridge_channel_grok_cli::normalize::GrokCliNormalizer;
use bridge_channel_kimi::normalize::KimiNormalizer;
use bridge_channel_opencode::normalize::OpencodeNormalizer;
use bridge_channel_pi::normalize::PiNormalizer;
use bridge_core::encode::MarkerDialect;
use bridge_core::turn::Normalizer;
use libfuzzer_sys::fuzz_target;

#[path = "common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let (mut normalizer, dialect): (Box<dyn Normalizer>, MarkerDialect) = match selector % 8 {
        0 => (Box::new(CodexNormalizer::new()), MarkerDialect::THREAD),
        1 => (Box::new(PiNormalizer::new("pi")), MarkerDialect::SESSION),
        2 => (Box::new(GrokCliNormalizer::new()), MarkerDialect::SESSION),
        3 => (
            Box::new(GeminiJsonNormalizer::new(None)),
            MarkerDialect::SESSION,
        ),
        4 => (
            Box::new(OpencodeNormalizer::new(None)),
            MarkerDialect::SESSION,
        ),
        5 => (Box::new(KimiNormalizer::new(None)), MarkerDialect::SESSION),
        6 => (Box::new(CopilotNormalizer::new()), MarkerDialect::SESSION),
        _ => (
            Box::new(ClaudeNormalizer::with_dialect(
                &bridge_channel_qwen::json::DIALECT,
            )),
            MarkerDialect::SESSION,
        ),
    };
    let exit = match (selector / 8) % 3 {
        0 => ExitStatus::from_raw(0),
        1 => ExitStatus::from_raw(1 << 8),
        _ => ExitStatus::from_raw(9),
    };
    let text = String::from_utf8_lossy(rest);
    let mut events = Vec::new();
    for line in text.split('\n') {
        normalizer.line(line, &mut events);
        normalizer.stderr_line(line, &mut events);
    }
    normalizer.finish(Some(&exit), &mut events);
    let _ = normalizer.session_id();
    common::check_events(&events, dialect);
});
