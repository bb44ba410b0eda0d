//! A Codex thread's history, read back from its rollout file (for `getSession`, and so for
//! `bridge acp codex`'s `session/load`), and the threads Codex keeps (`listSessions`).
//!
//! The rollout ([`crate::rollout`]) holds two views of a turn: `response_item`s, what the model
//! was sent (with the environment and instruction messages Codex injects), and
//! `event_msg`/`item_completed`, the thread items as a user saw them (`UserMessage`,
//! `AgentMessage`, `Reasoning`, `CommandExecution`, `FileChange`, `McpToolCall`, `WebSearch`).
//! The history is built from the second: it is what the conversation showed, without the
//! injected context.
//!
//! The rows have the shape of the plugin's `getSession` messages (Claude Code's transcript
//! entries: `type` `user`/`assistant`, `message.content` blocks `text`, `thinking`,
//! `tool_use`, `tool_result`), so every reader of `getSession` reads a Codex thread as it reads
//! a Claude conversation. Tool calls are named as the live stream names them ([`classify`],
//! [`tool_for`]).
//!
//! [`transcript`] is pure over the lines; [`list_threads`] walks `$CODEX_HOME/sessions`.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use bridge_core::normalize::str_at;
use serde_json::{Value, json};

use crate::command::{classify, display_command};
use crate::normalize::file_changes;
use crate::patch::tool_for;
use crate::rollout::MAX_ROLLOUT_LINE;

/// Lines of a rollout read for its summary (the first prompt comes within the first turn).
pub const SUMMARY_LINES: usize = 400;

/// Rollout files looked at by [`list_threads`] (the newest ones).
pub const MAX_LISTED: usize = 1000;

/// The rows of a thread's history from its rollout lines, oldest first (see the
/// [module docs](self)). Lines that are not JSON or not items are skipped.
///
/// ```
/// let lines = [
///     r#"{"timestamp":"t1","type":"event_msg","payload":{"type":"item_completed","item":{"type":"UserMessage","id":"u1","content":[{"type":"text","text":"hi"}]}}}"#,
///     r#"{"timestamp":"t2","type":"event_msg","payload":{"type":"item_completed","item":{"type":"AgentMessage","id":"a1","content":[{"type":"Text","text":"Hello"}]}}}"#,
/// ];
/// let rows = bridge_codex::history::transcript(lines.iter().copied());
/// assert_eq!(rows[0]["type"], "user");
/// assert_eq!(rows[0]["message"]["content"][0]["text"], "hi");
/// assert_eq!(rows[1]["message"]["content"][0]["text"], "Hello");
/// ```
pub fn transcript<'a>(lines: impl IntoIterator<Item = &'a str>) -> Vec<Value> {
    let mut transcript = Transcript::default();
    for line in lines {
        transcript.push(line);
    }
    transcript.rows
}

/// [`transcript`] one line at a time (a long thread is read without holding its lines).
#[derive(Debug, Default)]
pub struct Transcript {
    /// The rows so far, oldest first.
    pub rows: Vec<Value>,
}

impl Transcript {
    /// Adds the rows of one rollout line.
    pub fn push(&mut self, line: &str) {
        // Most lines are model requests and bookkeeping: skip them before parsing.
        if memchr::memmem::find(line.as_bytes(), b"\"item_completed\"").is_none() {
            return;
        }
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            return;
        };
        let payload = &value["payload"];
        if str_at(&value, "type") != Some("event_msg")
            || str_at(payload, "type") != Some("item_completed")
        {
            return;
        }
        let timestamp = str_at(&value, "timestamp");
        self.rows.extend(rows_of(&payload["item"], timestamp));
    }
}

/// A row of `role` with content `blocks`, under the item's id.
fn row(role: &str, id: &str, timestamp: Option<&str>, blocks: Vec<Value>) -> Value {
    let mut row = json!({
        "type": role,
        "uuid": id,
        "message": {"role": role, "content": blocks},
    });
    if let Some(timestamp) = timestamp {
        row["timestamp"] = json!(timestamp);
    }
    row
}

/// The texts of an item's `content` array (`text`/`Text` blocks).
fn texts(item: &Value) -> Vec<String> {
    item["content"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|block| matches!(str_at(block, "type"), Some("text" | "Text")))
        .filter_map(|block| str_at(block, "text"))
        .filter(|text| !text.is_empty())
        .map(str::to_string)
        .collect()
}

/// A tool call and its result, as two rows.
fn call_rows(
    id: &str,
    timestamp: Option<&str>,
    (name, input): (&str, Value),
    output: Value,
    failed: bool,
) -> [Value; 2] {
    let call = json!({"type": "tool_use", "id": id, "name": name, "input": input});
    let mut result = json!({"type": "tool_result", "tool_use_id": id, "content": output});
    if failed {
        result["is_error"] = json!(true);
    }
    [
        row("assistant", id, timestamp, vec![call]),
        row("user", &format!("{id}-result"), timestamp, vec![result]),
    ]
}

/// Whether a tool item did not succeed (`failed`, `declined`, an error or a non-zero exit).
fn failed(item: &Value) -> bool {
    matches!(str_at(item, "status"), Some("failed" | "declined"))
        || item["exit_code"].as_i64().is_some_and(|code| code != 0)
        || item["error"].is_object()
        || item["error"].is_string()
}

/// The rows of one completed thread item (none for kinds the history leaves out).
fn rows_of(item: &Value, timestamp: Option<&str>) -> Vec<Value> {
    let id = str_at(item, "id").unwrap_or_default();
    match str_at(item, "type").unwrap_or_default() {
        "UserMessage" => {
            let blocks: Vec<Value> = texts(item)
                .into_iter()
                .map(|text| json!({"type": "text", "text": text}))
                .collect();
            if blocks.is_empty() {
                return Vec::new();
            }
            vec![row("user", id, timestamp, blocks)]
        }
        "AgentMessage" => {
            let text = texts(item).concat();
            if text.is_empty() {
                return Vec::new();
            }
            vec![row(
                "assistant",
                id,
                timestamp,
                vec![json!({"type": "text", "text": text})],
            )]
        }
        "Reasoning" => {
            let parts: Vec<&str> = ["summary_text", "raw_content"]
                .iter()
                .flat_map(|key| item[*key].as_array().into_iter().flatten())
                .filter_map(Value::as_str)
                .filter(|text| !text.is_empty())
                .collect();
            if parts.is_empty() {
                return Vec::new();
            }
            vec![row(
                "assistant",
                id,
                timestamp,
                vec![json!({"type": "thinking", "thinking": parts.join("\n\n")})],
            )]
        }
        "CommandExecution" => {
            let command = match &item["command"] {
                Value::Array(words) => {
                    let words: Vec<&str> = words.iter().filter_map(Value::as_str).collect();
                    match words.as_slice() {
                        [_, "-c" | "-lc" | "-cl", script] => script.to_string(),
                        _ => words.join(" "),
                    }
                }
                Value::String(command) => display_command(command),
                _ => return Vec::new(),
            };
            let tool = classify(&command);
            let output = str_at(item, "aggregated_output").unwrap_or_default();
            call_rows(
                id,
                timestamp,
                (tool.name, tool.input),
                json!(output),
                failed(item),
            )
            .into()
        }
        "FileChange" => {
            let mut changes: Vec<_> = file_changes(item).into_iter().collect();
            changes.sort_by(|a, b| a.0.cmp(&b.0));
            let many = changes.len() > 1;
            changes
                .iter()
                .enumerate()
                .flat_map(|(index, (path, change))| {
                    let (name, input, _, _) = tool_for(path, "update", Some(change));
                    // One call per file; the item's id names the first.
                    let call_id = if many && index > 0 {
                        format!("{id}-{index}")
                    } else {
                        id.to_string()
                    };
                    call_rows(
                        &call_id,
                        timestamp,
                        (name, input),
                        json!(path),
                        failed(item),
                    )
                })
                .collect()
        }
        "McpToolCall" => {
            let server = str_at(item, "server").unwrap_or("mcp");
            let tool = str_at(item, "tool").unwrap_or("tool");
            let output = if item["error"].is_null() {
                item["result"].clone()
            } else {
                item["error"].clone()
            };
            call_rows(
                id,
                timestamp,
                (&format!("mcp__{server}__{tool}"), item["arguments"].clone()),
                output,
                failed(item),
            )
            .into()
        }
        "WebSearch" => call_rows(
            id,
            timestamp,
            (
                "WebSearch",
                json!({"query": str_at(item, "query").unwrap_or_default()}),
            ),
            Value::Null,
            false,
        )
        .into(),
        _ => Vec::new(),
    }
}

/// Calls `each` with the lines of `path` in order (each at most [`MAX_ROLLOUT_LINE`] bytes;
/// longer ones and lines that are not UTF-8 are skipped) until it returns false.
pub fn each_line(path: &Path, mut each: impl FnMut(&str) -> bool) -> std::io::Result<()> {
    let mut reader = BufReader::with_capacity(256 * 1024, File::open(path)?);
    let mut buf = Vec::new();
    let mut sink = Vec::new();
    loop {
        buf.clear();
        // `take` bounds one line's memory; a longer one is drained to its newline.
        let n = (&mut reader)
            .take(MAX_ROLLOUT_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        if buf.len() > MAX_ROLLOUT_LINE {
            if buf.last() != Some(&b'\n') {
                skip_line(&mut reader, &mut sink)?;
            }
            continue;
        }
        if let Ok(text) = std::str::from_utf8(&buf)
            && !each(text.trim_end_matches(['\n', '\r']))
        {
            return Ok(());
        }
    }
}

/// Reads up to and past the next newline without keeping it.
fn skip_line(reader: &mut impl BufRead, sink: &mut Vec<u8>) -> std::io::Result<()> {
    loop {
        sink.clear();
        let n = reader.by_ref().take(64 * 1024).read_until(b'\n', sink)?;
        if n == 0 || sink.last() == Some(&b'\n') {
            return Ok(());
        }
    }
}

pub use bridge_core::query::SessionSummary as ThreadSummary;

/// The id, cwd and first prompt of a thread from the first [`SUMMARY_LINES`] lines of its
/// rollout (`None` without a `session_meta` line).
pub fn thread_head<'a>(lines: impl IntoIterator<Item = &'a str>) -> Option<ThreadSummary> {
    let mut head = None;
    for line in lines.into_iter().take(SUMMARY_LINES) {
        if !head_line(&mut head, line) {
            break;
        }
    }
    head
}

/// Reads one line into a thread's summary; false once it is complete (or cannot be).
fn head_line(head: &mut Option<ThreadSummary>, line: &str) -> bool {
    let Ok(value) = serde_json::from_str::<Value>(line) else {
        return true;
    };
    let payload = &value["payload"];
    match (str_at(&value, "type"), str_at(payload, "type")) {
        (Some("session_meta"), _) if head.is_none() => {
            let Some(id) = str_at(payload, "id") else {
                return false;
            };
            *head = Some(ThreadSummary {
                session_id: id.to_string(),
                cwd: str_at(payload, "cwd").unwrap_or_default().to_string(),
                title: None,
                updated_at: None,
            });
        }
        (Some("event_msg"), Some("item_completed"))
            if str_at(&payload["item"], "type") == Some("UserMessage") =>
        {
            let Some(head) = head.as_mut() else {
                return false;
            };
            head.title = ThreadSummary::title_of(&texts(&payload["item"]).join(" "));
            if head.title.is_some() {
                return false;
            }
        }
        _ => {}
    }
    true
}

/// The summary of the rollout at `path` ([`thread_head`]).
pub fn thread_head_of(path: &Path) -> std::io::Result<Option<ThreadSummary>> {
    let mut head = None;
    let mut read = 0;
    each_line(path, |line| {
        read += 1;
        head_line(&mut head, line) && read < SUMMARY_LINES
    })?;
    Ok(head)
}

/// The history rows of the rollout at `path` ([`transcript`]).
pub fn transcript_of(path: &Path) -> std::io::Result<Vec<Value>> {
    let mut transcript = Transcript::default();
    each_line(path, |line| {
        transcript.push(line);
        true
    })?;
    Ok(transcript.rows)
}

/// The threads under `codex_home` that have a prompt, newest first: those that ran in `cwd`,
/// or all of them without one. At most the [`MAX_LISTED`] newest rollout files are read.
pub fn list_threads(codex_home: &Path, cwd: Option<&str>) -> Vec<ThreadSummary> {
    let mut files = rollout_files(&codex_home.join("sessions"));
    // `rollout-<local time>-<id>.jsonl` under `YYYY/MM/DD`: the path orders them by start;
    // the newest write wins.
    let mut dated: Vec<(std::time::SystemTime, PathBuf)> = files
        .drain(..)
        .map(|path| {
            let modified = std::fs::metadata(&path)
                .and_then(|m| m.modified())
                .unwrap_or(std::time::UNIX_EPOCH);
            (modified, path)
        })
        .collect();
    dated.sort_by(|a, b| b.cmp(a));
    dated
        .into_iter()
        .take(MAX_LISTED)
        .filter_map(|(modified, path)| {
            let mut head = thread_head_of(&path).ok()??;
            head.title.as_ref()?;
            if cwd.is_some_and(|cwd| head.cwd != cwd) {
                return None;
            }
            head.updated_at = Some(bridge_core::permission_ipc::iso8601(modified));
            Some(head)
        })
        .collect()
}

/// Every `rollout-*.jsonl` under `sessions` (three levels of dated directories).
fn rollout_files(sessions: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![(sessions.to_path_buf(), 0)];
    while let Some((dir, depth)) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if depth < 3 && path.is_dir() {
                dirs.push((path, depth + 1));
            } else if name.starts_with("rollout-") && name.ends_with(".jsonl") {
                found.push(path);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(item: Value) -> String {
        json!({"timestamp": "2026-12-03T10:00:00Z", "type": "event_msg",
            "payload": {"type": "item_completed", "item": item}})
        .to_string()
    }

    #[test]
    fn items_become_rows_and_injected_context_is_left_out() {
        let lines = [
            json!({"type": "session_meta", "payload": {"id": "t-1", "cwd": "/w"}}).to_string(),
            // What the model was sent, environment context included: not the history.
            json!({"type": "response_item", "payload": {"type": "message", "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context>"}]}})
            .to_string(),
            item(json!({"type": "UserMessage", "id": "u1",
                "content": [{"type": "text", "text": "run it"}]})),
            item(
                json!({"type": "Reasoning", "id": "r1", "summary_text": ["thinking"],
                "raw_content": []}),
            ),
            item(json!({"type": "CommandExecution", "id": "c1",
                "command": ["/bin/bash", "-lc", "echo hello"], "status": "completed",
                "aggregated_output": "hello\n", "exit_code": 0})),
            item(json!({"type": "CommandExecution", "id": "c2",
                "command": ["/bin/bash", "-lc", "false"], "status": "failed",
                "aggregated_output": "", "exit_code": 1})),
            item(
                json!({"type": "FileChange", "id": "f1", "status": "completed",
                "changes": {"/w/a.txt": {"type": "add", "content": "x\n"}}}),
            ),
            item(json!({"type": "AgentMessage", "id": "a1",
                "content": [{"type": "Text", "text": "Done"}]})),
            "not json".to_string(),
        ];
        let rows = transcript(lines.iter().map(String::as_str));
        let summary: Vec<(String, String)> = rows
            .iter()
            .map(|row| {
                let block = &row["message"]["content"][0];
                (
                    row["type"].as_str().unwrap().to_string(),
                    block["type"].as_str().unwrap().to_string(),
                )
            })
            .collect();
        let pairs: Vec<(&str, &str)> = summary
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("user", "text"),
                ("assistant", "thinking"),
                ("assistant", "tool_use"),
                ("user", "tool_result"),
                ("assistant", "tool_use"),
                ("user", "tool_result"),
                ("assistant", "tool_use"),
                ("user", "tool_result"),
                ("assistant", "text"),
            ]
        );
        let call = &rows[2]["message"]["content"][0];
        assert_eq!(call["name"], "Bash");
        assert_eq!(call["input"]["command"], "echo hello");
        assert_eq!(rows[3]["message"]["content"][0]["content"], "hello\n");
        assert_eq!(rows[3]["message"]["content"][0].get("is_error"), None);
        assert_eq!(rows[5]["message"]["content"][0]["is_error"], true);
        assert_eq!(rows[6]["message"]["content"][0]["name"], "Write");
        assert_eq!(rows[0]["timestamp"], "2026-12-03T10:00:00Z");
    }

    #[test]
    fn threads_are_listed_newest_first_with_their_first_prompt_and_filtered_by_cwd() {
        let home = tempfile::tempdir().unwrap();
        let write = |day: &str, id: &str, cwd: &str, prompt: Option<&str>| {
            let dir = home.path().join("sessions/2026/12").join(day);
            std::fs::create_dir_all(&dir).unwrap();
            let mut text = json!({"type": "session_meta", "payload": {"id": id, "cwd": cwd}})
                .to_string()
                + "\n";
            if let Some(prompt) = prompt {
                text += &item(json!({"type": "UserMessage", "id": "u",
                    "content": [{"type": "text", "text": prompt}]}));
                text += "\n";
            }
            let path = dir.join(format!("rollout-2026-12-{day}T10-00-00-{id}.jsonl"));
            std::fs::write(&path, text).unwrap();
            path
        };
        let old = write("01", "t-old", "/w", Some("first\n  thread"));
        write("02", "t-other", "/elsewhere", Some("other"));
        write("03", "t-empty", "/w", None);
        let new = write("03", "t-new", "/w", Some("second"));
        let past = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        File::options()
            .write(true)
            .open(&old)
            .unwrap()
            .set_modified(past)
            .unwrap();
        File::options()
            .write(true)
            .open(&new)
            .unwrap()
            .set_modified(std::time::SystemTime::now())
            .unwrap();
        let listed = list_threads(home.path(), Some("/w"));
        let ids: Vec<&str> = listed.iter().map(|t| t.session_id.as_str()).collect();
        assert_eq!(ids, ["t-new", "t-old"]);
        assert_eq!(listed[1].title.as_deref(), Some("first thread"));
        assert!(listed[0].updated_at.is_some());
        assert_eq!(list_threads(home.path(), None).len(), 3);
        assert!(list_threads(&home.path().join("none"), None).is_empty());
    }

    #[test]
    fn giant_and_non_utf8_lines_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.jsonl");
        let mut bytes = b"first\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', MAX_ROLLOUT_LINE + 10));
        bytes.extend(b"\n\xff\xfe\nlast");
        std::fs::write(&path, bytes).unwrap();
        let lines = |limit: usize| {
            let mut seen = Vec::new();
            each_line(&path, |line| {
                seen.push(line.to_string());
                seen.len() < limit
            })
            .unwrap();
            seen
        };
        assert_eq!(lines(100), ["first", "last"]);
        assert_eq!(lines(1), ["first"]);
    }
}
