//! The `system` provider: `bridge system status [--json]` and the ai-bridge compatibility
//! commands (`getSdkStatus`, `checkClaudeSdk`, `checkCodexSdk`). Being written.

use std::process::ExitCode;

/// Runs `bridge system <command>`.
pub fn run(command: Option<&str>, json: bool) -> ExitCode {
    let _ = json;
    println!(
        "{}",
        serde_json::json!({"success": false, "error": format!("Unknown System command: {}", command.unwrap_or(""))})
    );
    ExitCode::from(1)
}
