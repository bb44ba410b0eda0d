//! `bridge daemon`: the plugin's daemon protocol on stdin/stdout (see the `bridge-daemon`
//! crate).

use std::process::ExitCode;
use std::time::Duration;

use bridge::core::encode::Format;
use bridge::daemon::{DaemonOptions, Ended, PerProcess, out::Out, run};
use tokio_util::sync::CancellationToken;

use crate::{Cli, FormatArg, base_redactor, fail_line, install_signal_handlers, turn_limits};

/// Runs the daemon until stdin ends (exit 0), `shutdown` (0), its parent dies (0), a signal
/// (130) or a closed stdout (1).
pub(crate) fn run_daemon(cli: Cli) -> ExitCode {
    let program = match std::env::current_exe() {
        Ok(program) => program,
        Err(error) => return fail_line(&format!("cannot find the bridge executable: {error}")),
    };
    let runtime = match crate::runtime() {
        Ok(runtime) => runtime,
        Err(code) => return code,
    };
    let mut options = DaemonOptions::new(PerProcess {
        program,
        deadline: Duration::from_secs(cli.command_timeout),
    });
    options.format = match cli.format {
        Some(FormatArg::Jsonl) => Format::Jsonl,
        _ => Format::Markers,
    };
    options.limits = turn_limits(&cli);
    options.idle_timeout = Duration::from_secs(cli.session_idle_timeout);
    options.max_warm = cli.max_warm.max(1);
    options.approval_timeout = Duration::from_secs(cli.approval_timeout);
    options.redactor = base_redactor();
    options.bridge_version = env!("CARGO_PKG_VERSION");
    let ended = runtime.block_on(async {
        let stop = CancellationToken::new();
        install_signal_handlers(stop.clone());
        let out = Out::new(Box::new(std::io::stdout()));
        run(bridge::router(), options, tokio::io::stdin(), out, stop).await
    });
    // Sessions that did not close in time are killed as their tasks are dropped here; the
    // stdin reader blocked on an open pipe is not waited for.
    runtime.shutdown_timeout(Duration::from_millis(500));
    match ended {
        Ended::StdinClosed | Ended::Requested | Ended::ParentExited => ExitCode::SUCCESS,
        Ended::Stopped => ExitCode::from(130),
        Ended::StdoutClosed => ExitCode::from(1),
    }
}
