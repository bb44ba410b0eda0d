//! `mock-llm`: run the mock model server until interrupted.
//!
//! Prints `listening on 127.0.0.1:PORT` as the first line on stdout once it accepts connections.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use mock_llm::{Config, MockServer};

fn scenario_help() -> String {
    let mut s = String::from("Scenarios (select with MOCK:<name> in the prompt):\n");
    for (name, what) in mock_llm::scenario::BUILTIN_SCENARIOS {
        s.push_str(&format!("  {name:<16} {what}\n"));
    }
    s
}

/// Mock model server (Anthropic Messages API) on 127.0.0.1 for end-to-end tests of agent CLIs.
#[derive(Debug, Parser)]
#[command(name = "mock-llm", version, after_help = scenario_help())]
struct Args {
    /// Port on 127.0.0.1 (0 picks a free one; read it from the first stdout line).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Append every request as one JSON line to this file (API keys redacted).
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Scenario for requests without a MOCK:<name> marker (default: text).
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Pause after each streamed delta, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 5)]
    event_delay_ms: u64,
    /// Pause between the deltas of the `slow` scenario, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 150)]
    slow_delay_ms: u64,
    /// Number of deltas of the `slow` scenario.
    #[arg(long, value_name = "N", default_value_t = 40)]
    slow_deltas: usize,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let mut config = Config {
        port: args.port,
        default_scenario: args.scenario,
        log_path: args.log,
        event_delay: Duration::from_millis(args.event_delay_ms),
        ..Config::default()
    };
    config.settings.slow_delay = Duration::from_millis(args.slow_delay_ms);
    config.settings.slow_deltas = args.slow_deltas;
    let server = match MockServer::start(config).await {
        Ok(server) => server,
        Err(e) => {
            eprintln!("mock-llm: cannot start on 127.0.0.1:{}: {e}", args.port);
            return std::process::ExitCode::FAILURE;
        }
    };
    {
        use std::io::Write as _;
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "listening on {}", server.addr());
        let _ = out.flush();
    }
    // SIGINT ends the server; SIGTERM's default action does too (every log line is flushed).
    let _ = tokio::signal::ctrl_c().await;
    drop(server);
    std::process::ExitCode::SUCCESS
}
