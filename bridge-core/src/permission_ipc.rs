//! The ai-bridge file IPC for approvals, so the JetBrains plugin's dialogs work unchanged.
//!
//! When `CLAUDE_PERMISSION_DIR` is set, each approval is a pair of files in that directory,
//! namespaced by `SID` = `CLAUDE_SESSION_ID` (default `default`):
//!
//! | kind | the bridge writes | the plugin answers with |
//! |---|---|---|
//! | tool | `request-<SID>-<id>.json`: `{requestId, toolName, inputs, timestamp, cwd}` | `response-<SID>-<id>.json`: `{"allow":bool}` |
//! | question | `ask-user-question-<SID>-ask-<uuid>.json`: `{requestId, toolName:"AskUserQuestion", questions, timestamp, cwd}` | `ask-user-question-response-<SID>-<requestId>.json`: `{"answers":{…}}` |
//! | plan | `plan-approval-<SID>-plan-<uuid>.json`: `{requestId, toolName:"ExitPlanMode", plan, allowedPrompts, timestamp, cwd}` | `plan-approval-response-<SID>-<requestId>.json`: `{"approved":bool,"targetMode":…}` |
//!
//! The bridge polls for the answer every 100 ms for up to `CLAUDE_PERMISSION_SAFETY_NET_MS`
//! (default 360 000, clamped to 90 000–3 660 000), deletes the answer after reading it and its
//! own request when done. Only a literal `"allow": true` allows; a malformed answer, a missing
//! one or a timeout denies. Request files are written whole (temporary name, then rename), and
//! a directory the bridge creates is mode 0700.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::permission::{DecisionKind, PermissionDecision, PermissionRequest, RequestKind};

/// Poll interval for answer files.
pub const POLL_INTERVAL: Duration = Duration::from_millis(100);

/// Longest plan text written to a plan-approval file.
pub const MAX_PLAN_CHARS: usize = 100_000;

/// The file protocol, bound to one directory and session.
#[derive(Debug, Clone)]
pub struct FileIpc {
    dir: PathBuf,
    session: String,
    cwd: String,
    safety_net: Duration,
}

/// Reads `CLAUDE_PERMISSION_SAFETY_NET_MS` with the ai-bridge default and clamp.
pub fn safety_net_from(value: Option<&str>) -> Duration {
    let ms = value
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(360_000)
        .clamp(90_000, 3_660_000);
    Duration::from_millis(ms)
}

impl FileIpc {
    /// The IPC described by the environment, when `CLAUDE_PERMISSION_DIR` is set.
    pub fn from_env(cwd: &Path) -> Option<FileIpc> {
        Self::from_vars(|name| std::env::var(name).ok(), cwd)
    }

    /// The IPC the variables `var` looks up describe (a daemon request's own `env` first,
    /// then the daemon's), when `CLAUDE_PERMISSION_DIR` is set.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>, cwd: &Path) -> Option<FileIpc> {
        let dir = var("CLAUDE_PERMISSION_DIR").filter(|d| !d.is_empty())?;
        let session = var("CLAUDE_SESSION_ID")
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".into());
        let safety_net = safety_net_from(var("CLAUDE_PERMISSION_SAFETY_NET_MS").as_deref());
        Some(FileIpc::new(PathBuf::from(dir), session, cwd, safety_net))
    }

    /// An IPC in `dir` for routing id `session`.
    pub fn new(dir: PathBuf, session: String, cwd: &Path, safety_net: Duration) -> FileIpc {
        FileIpc {
            dir,
            session,
            cwd: cwd.display().to_string(),
            safety_net,
        }
    }

    /// How long a request waits for its answer.
    pub fn safety_net(&self) -> Duration {
        self.safety_net
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn ensure_dir(&self) -> std::io::Result<()> {
        if self.dir.is_dir() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.dir)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }

    /// Writes the request file for `request` and waits (up to `timeout`) for the answer.
    /// `None` when no answer arrived in time or the files could not be written.
    pub async fn ask(
        &self,
        request: &PermissionRequest,
        timeout: Duration,
    ) -> Option<PermissionDecision> {
        let uuid = uuid::Uuid::new_v4().to_string();
        let sid = &self.session;
        let (request_id, request_name, response_name, body) = match request.kind {
            RequestKind::Tool => {
                let inputs = match &request.input {
                    Value::Object(_) => request.input.clone(),
                    other => json!({"value": other}),
                };
                (
                    uuid.clone(),
                    format!("request-{sid}-{uuid}.json"),
                    format!("response-{sid}-{uuid}.json"),
                    json!({"requestId": uuid, "toolName": request.tool_name, "inputs": inputs, "timestamp": now_iso8601(), "cwd": self.cwd}),
                )
            }
            RequestKind::Question => {
                let id = format!("ask-{uuid}");
                (
                    id.clone(),
                    format!("ask-user-question-{sid}-{id}.json"),
                    format!("ask-user-question-response-{sid}-{id}.json"),
                    json!({"requestId": id, "toolName": "AskUserQuestion", "questions": request.input.get("questions").cloned().unwrap_or(Value::Array(vec![])), "timestamp": now_iso8601(), "cwd": self.cwd}),
                )
            }
            RequestKind::PlanApproval => {
                let id = format!("plan-{uuid}");
                let plan: String = request
                    .input
                    .get("plan")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .chars()
                    .take(MAX_PLAN_CHARS)
                    .collect();
                (
                    id.clone(),
                    format!("plan-approval-{sid}-{id}.json"),
                    format!("plan-approval-response-{sid}-{id}.json"),
                    json!({"requestId": id, "toolName": "ExitPlanMode", "plan": plan, "allowedPrompts": request.input.get("allowedPrompts").cloned().unwrap_or(Value::Array(vec![])), "timestamp": now_iso8601(), "cwd": self.cwd}),
                )
            }
        };
        let _ = request_id;
        self.ensure_dir().ok()?;
        let request_path = self.dir.join(&request_name);
        let temp_path = self.dir.join(format!(".tmp-{uuid}"));
        let text = serde_json::to_string_pretty(&body).ok()?;
        std::fs::write(&temp_path, text).ok()?;
        if std::fs::rename(&temp_path, &request_path).is_err() {
            let _ = std::fs::remove_file(&temp_path);
            return None;
        }
        // Removes our request file however this ends (answer, timeout, cancellation).
        let _cleanup = RemoveOnDrop(request_path);
        let response_path = self.dir.join(&response_name);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Ok(bytes) = std::fs::read(&response_path) {
                let _ = std::fs::remove_file(&response_path);
                return Some(decode_answer(request.kind, &bytes));
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(POLL_INTERVAL).await;
        }
    }
}

/// Maps an answer file to a decision; anything unexpected denies.
fn decode_answer(kind: RequestKind, bytes: &[u8]) -> PermissionDecision {
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        return PermissionDecision::deny("Permission denied: the answer file was not valid JSON");
    };
    match kind {
        RequestKind::Tool => {
            if value.get("allow") == Some(&Value::Bool(true)) {
                PermissionDecision::new(DecisionKind::AllowOnce)
            } else {
                PermissionDecision::deny("The user denied this tool use")
            }
        }
        RequestKind::Question => match value.get("answers") {
            Some(answers @ Value::Object(_)) => PermissionDecision {
                answers: Some(answers.clone()),
                ..PermissionDecision::new(DecisionKind::AllowOnce)
            },
            _ => PermissionDecision::deny("The user dismissed the question"),
        },
        RequestKind::PlanApproval => {
            if value.get("approved") == Some(&Value::Bool(true)) {
                PermissionDecision {
                    target_mode: value
                        .get("targetMode")
                        .and_then(Value::as_str)
                        .map(str::to_string),
                    ..PermissionDecision::new(DecisionKind::AllowOnce)
                }
            } else {
                PermissionDecision::deny("The user rejected the plan")
            }
        }
    }
}

struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Current UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ` (what JavaScript's `toISOString` prints).
pub fn now_iso8601() -> String {
    iso8601(SystemTime::now())
}

/// `time` in UTC as `YYYY-MM-DDTHH:MM:SS.mmmZ` (what JavaScript's `toISOString` prints); a
/// time before 1970 is 1970-01-01.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// let t = UNIX_EPOCH + Duration::from_millis(1_700_000_000_123);
/// assert_eq!(bridge_core::permission_ipc::iso8601(t), "2023-11-14T22:13:20.123Z");
/// ```
pub fn iso8601(time: SystemTime) -> String {
    let now = time.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = now.as_secs();
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil-from-days (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        now.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::event::ToolKind;

    fn request(kind: RequestKind, input: Value) -> PermissionRequest {
        PermissionRequest {
            request_id: "x".into(),
            kind,
            tool_name: "Write".into(),
            tool_kind: ToolKind::Edit,
            input,
            description: None,
            paths: vec![],
            tool_use_id: None,
            options: vec![],
            native: None,
        }
    }

    /// Plays the plugin: waits for a file with `prefix`, checks it, answers with `answer`.
    async fn answer_first(dir: &Path, prefix: &str, response_prefix: &str, answer: &str) -> Value {
        loop {
            for entry in std::fs::read_dir(dir).unwrap().flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(prefix) && !name.starts_with(response_prefix) {
                    let body: Value =
                        serde_json::from_slice(&std::fs::read(entry.path()).unwrap()).unwrap();
                    let id = body["requestId"].as_str().unwrap().to_string();
                    std::fs::write(dir.join(format!("{response_prefix}{id}.json")), answer)
                        .unwrap();
                    return body;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    #[tokio::test]
    async fn tool_request_round_trip_and_cleanup() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("perm");
        let ipc = FileIpc::new(
            dir.clone(),
            "S1".into(),
            Path::new("/w"),
            Duration::from_secs(5),
        );
        let req = request(RequestKind::Tool, json!({"file_path": "/w/a.txt"}));
        let (decision, body) = tokio::join!(
            ipc.ask(&req, Duration::from_secs(5)),
            answer_first(&dir, "request-S1-", "response-S1-", r#"{"allow":true}"#)
        );
        assert_eq!(decision.unwrap().decision, DecisionKind::AllowOnce);
        assert_eq!(body["toolName"], "Write");
        assert_eq!(body["inputs"]["file_path"], "/w/a.txt");
        assert_eq!(body["cwd"], "/w");
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            0,
            "request and answer files are removed"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(
                std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777,
                0o700
            );
        }
    }

    #[tokio::test]
    async fn only_literal_true_allows_and_timeouts_clean_up() {
        let tmp = tempfile::tempdir().unwrap();
        let ipc = FileIpc::new(
            tmp.path().to_path_buf(),
            "S".into(),
            Path::new("/w"),
            Duration::from_secs(5),
        );
        let req = request(RequestKind::Tool, json!({}));
        let (decision, _) = tokio::join!(
            ipc.ask(&req, Duration::from_secs(5)),
            answer_first(
                tmp.path(),
                "request-S-",
                "response-S-",
                r#"{"allow":"true"}"#
            )
        );
        assert_eq!(decision.unwrap().decision, DecisionKind::Deny);
        assert!(ipc.ask(&req, Duration::from_millis(150)).await.is_none());
        assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn question_and_plan_pairs() {
        let tmp = tempfile::tempdir().unwrap();
        let ipc = FileIpc::new(
            tmp.path().to_path_buf(),
            "S".into(),
            Path::new("/w"),
            Duration::from_secs(5),
        );
        let q = request(
            RequestKind::Question,
            json!({"questions": [{"question": "Which?"}]}),
        );
        let (decision, body) = tokio::join!(
            ipc.ask(&q, Duration::from_secs(5)),
            answer_first(
                tmp.path(),
                "ask-user-question-S-ask-",
                "ask-user-question-response-S-",
                r#"{"answers":{"Which?":"A"}}"#
            )
        );
        assert_eq!(decision.unwrap().answers, Some(json!({"Which?": "A"})));
        assert_eq!(body["questions"][0]["question"], "Which?");
        let p = request(RequestKind::PlanApproval, json!({"plan": "1. do it"}));
        let (decision, body) = tokio::join!(
            ipc.ask(&p, Duration::from_secs(5)),
            answer_first(
                tmp.path(),
                "plan-approval-S-plan-",
                "plan-approval-response-S-",
                r#"{"approved":true,"targetMode":"acceptEdits"}"#
            )
        );
        let decision = decision.unwrap();
        assert_eq!(decision.decision, DecisionKind::AllowOnce);
        assert_eq!(decision.target_mode.as_deref(), Some("acceptEdits"));
        assert_eq!(body["plan"], "1. do it");
    }

    #[test]
    fn safety_net_default_and_clamp() {
        assert_eq!(safety_net_from(None), Duration::from_millis(360_000));
        assert_eq!(safety_net_from(Some("1000")), Duration::from_millis(90_000));
        assert_eq!(
            safety_net_from(Some("99999999")),
            Duration::from_millis(3_660_000)
        );
        assert_eq!(
            safety_net_from(Some("120000")),
            Duration::from_millis(120_000)
        );
    }

    #[test]
    fn iso_timestamps_look_like_javascript() {
        let ts = now_iso8601();
        assert_eq!(ts.len(), 24, "{ts}");
        assert!(ts.ends_with('Z') && ts.as_bytes()[10] == b'T', "{ts}");
    }
}
