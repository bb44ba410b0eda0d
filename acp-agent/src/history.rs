//! `session/load`: which provider conversation an ACP session is, and its history replayed as
//! `session/update`s.
//!
//! An ACP session id is minted by `session/new` before the provider has a conversation; the
//! provider's id comes with the first turn. [`SessionMap`] keeps the pairs in a file (one JSON
//! line per pair, the newest wins), so a later agent process (the client restarted it) can
//! resume the conversation a client asks to load. A session id that is in no line is taken as
//! the provider's own id (a conversation started outside ACP).
//!
//! The history is read with the provider's `getSession <sessionId> <cwd>` query: Claude-shaped
//! transcript entries (Claude's session file, Codex's rollout), replayed by [`replay`].

use std::io::{BufRead, Write};
use std::path::PathBuf;

use agent_client_protocol_schema::v1 as acp;
use serde_json::{Value, json};

/// How much of the end of the map file is read (older pairs before it are not found).
const MAX_MAP_BYTES: u64 = 16 * 1024 * 1024;

/// The ACP session id → provider conversation id pairs, in a file.
#[derive(Debug, Clone)]
pub struct SessionMap {
    path: PathBuf,
}

impl SessionMap {
    /// The map kept in `path` (created with its directory on the first pair).
    pub fn new(path: PathBuf) -> Self {
        SessionMap { path }
    }

    /// Records that ACP session `acp` is the provider's conversation `provider`.
    pub fn record(&self, acp: &str, provider: &str) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        let line = json!({"acp": acp, "provider": provider}).to_string();
        file.write_all(format!("{line}\n").as_bytes())
    }

    /// The provider conversation of ACP session `acp`, if one was recorded.
    pub fn lookup(&self, acp: &str) -> Option<String> {
        let mut found = None;
        self.each_pair(|acp_id, provider| {
            if acp_id == acp {
                found = Some(provider.to_string());
            }
        });
        found
    }

    /// The ACP session of each provider conversation recorded (the first ACP session that
    /// became it: the one the client opened).
    pub fn acp_ids(&self) -> std::collections::HashMap<String, String> {
        let mut ids = std::collections::HashMap::new();
        self.each_pair(|acp, provider| {
            ids.entry(provider.to_string())
                .or_insert_with(|| acp.to_string());
        });
        ids
    }

    /// Calls `f(acp, provider)` for each pair, oldest first (those in the last
    /// [`MAX_MAP_BYTES`] of the file).
    fn each_pair(&self, mut f: impl FnMut(&str, &str)) {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut file) = std::fs::File::open(&self.path) else {
            return;
        };
        let len = file.metadata().map(|m| m.len()).unwrap_or(0);
        // The newest pairs are at the end (a cut first line just fails to parse).
        if file
            .seek(SeekFrom::Start(len.saturating_sub(MAX_MAP_BYTES)))
            .is_err()
        {
            return;
        }
        let reader = std::io::BufReader::new(file.take(MAX_MAP_BYTES));
        for line in reader.lines().map_while(Result::ok) {
            let Ok(pair) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if let (Some(acp), Some(provider)) = (pair["acp"].as_str(), pair["provider"].as_str()) {
                f(acp, provider);
            }
        }
    }
}

/// The updates that replay `messages` (Claude-shaped transcript entries: `{"type":"user"|
/// "assistant","message":{"content":…}}`): user text as `user_message_chunk`, assistant text
/// and thinking as message and thought chunks, tool calls as completed `tool_call`s with their
/// results.
pub fn replay(messages: &[Value]) -> Vec<acp::SessionUpdate> {
    let mut updates = Vec::new();
    for entry in messages {
        let role = entry["type"].as_str().unwrap_or_default();
        let content = &entry["message"]["content"];
        let blocks: Vec<Value> = match content {
            Value::String(text) => vec![json!({"type": "text", "text": text})],
            Value::Array(blocks) => blocks.clone(),
            _ => Vec::new(),
        };
        for block in &blocks {
            let text = |key: &str| block[key].as_str().unwrap_or_default().to_string();
            match (role, block["type"].as_str().unwrap_or_default()) {
                ("user", "text") if !text("text").is_empty() => {
                    updates.push(acp::SessionUpdate::UserMessageChunk(
                        acp::ContentChunk::new(text("text").into()),
                    ));
                }
                ("assistant", "text") if !text("text").is_empty() => {
                    updates.push(acp::SessionUpdate::AgentMessageChunk(
                        acp::ContentChunk::new(text("text").into()),
                    ));
                }
                ("assistant", "thinking") if !text("thinking").is_empty() => {
                    updates.push(acp::SessionUpdate::AgentThoughtChunk(
                        acp::ContentChunk::new(text("thinking").into()),
                    ));
                }
                ("assistant", "tool_use") => {
                    let title = crate::encode::title(&text("name"), &block["input"]);
                    let call = acp::ToolCall::new(text("id"), title)
                        .status(acp::ToolCallStatus::Completed)
                        .raw_input(block["input"].clone());
                    updates.push(acp::SessionUpdate::ToolCall(call));
                }
                ("user", "tool_result") => {
                    let status = if block["is_error"] == true {
                        acp::ToolCallStatus::Failed
                    } else {
                        acp::ToolCallStatus::Completed
                    };
                    let fields = acp::ToolCallUpdateFields::new()
                        .status(status)
                        .raw_output(block["content"].clone());
                    updates.push(acp::SessionUpdate::ToolCallUpdate(
                        acp::ToolCallUpdate::new(text("tool_use_id"), fields),
                    ));
                }
                _ => {}
            }
        }
    }
    updates
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_pair_wins_and_an_unknown_id_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let map = SessionMap::new(dir.path().join("state/acp-sessions.jsonl"));
        assert_eq!(map.lookup("a"), None);
        map.record("a", "p1").unwrap();
        map.record("b", "p2").unwrap();
        map.record("a", "p3").unwrap();
        assert_eq!(map.lookup("a").as_deref(), Some("p3"));
        assert_eq!(map.lookup("b").as_deref(), Some("p2"));
        assert_eq!(map.lookup("c"), None);
    }

    #[test]
    fn a_transcript_replays_as_chunks_and_completed_calls() {
        let messages = vec![
            json!({"type":"user","message":{"role":"user","content":"hello"}}),
            json!({"type":"assistant","message":{"content":[
                {"type":"thinking","thinking":"hm"},
                {"type":"text","text":"Hi"},
                {"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls"}}]}}),
            json!({"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"a.txt"}]}}),
        ];
        let kinds: Vec<String> = replay(&messages)
            .into_iter()
            .map(|u| {
                serde_json::to_value(u).unwrap()["sessionUpdate"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "user_message_chunk",
                "agent_thought_chunk",
                "agent_message_chunk",
                "tool_call",
                "tool_call_update"
            ]
        );
    }
}
