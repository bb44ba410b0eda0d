//! Claude Code's own session files, read for the plugin's history commands: `getSession`
//! (the messages of a conversation) and `getLatestUserMessage` (its last prompt).
//!
//! Claude Code appends every entry of a conversation to
//! `$CLAUDE_CONFIG_DIR/projects/<cwd with every non-alphanumeric character replaced by '-'>/<sessionId>.jsonl`
//! (`~/.claude` without `CLAUDE_CONFIG_DIR`). Entries that belong to the conversation carry a
//! `uuid` and a `parentUuid`; a rewind or an edit starts a new branch from an earlier entry,
//! and the entries of the old branch stay in the file. What the conversation *is* is the chain
//! of parent links back from the last entry ([`active_chain`]). Bookkeeping lines (queue
//! operations, `last-prompt`, file-history snapshots) have no `uuid`; `attachment` entries are
//! links of the chain but not messages, except a background task's queued
//! `<task-notification>`, which becomes a user row as the plugin's own reader makes it.
//!
//! The functions here are pure over a reader; [`QUERIES`] wraps them as query commands.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};
use std::io::{self, BufRead, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use bridge_core::query::{Input, Query, QueryError, QueryReply, QueryRequest};
use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

/// The text Claude Code records when a turn is interrupted (also `… for tool use]`).
pub const INTERRUPTED: &str = "[Request interrupted by user";

/// Longest entry read (longer lines are skipped with a note): a pasted image is a few MiB.
pub const MAX_ENTRY_BYTES: usize = 64 * 1024 * 1024;

/// How much of the end of the file [`latest_user_message`] reads first (it doubles the window
/// until it finds a prompt or reaches the start).
pub const TAIL_WINDOW: u64 = 32 * 1024;

/// At most this many notes are kept; the rest are counted.
const MAX_NOTES: usize = 20;

/// The plugin's history commands, and `listSessions` (for `bridge acp`'s `session/list`).
pub const QUERIES: [Query; 3] = [
    Query::new(
        "getSession",
        Input::Args(&["sessionId", "cwd"]),
        "the messages of a conversation (its active chain), from Claude Code's session file",
        get_session,
    )
    .error_tag("[GET_SESSION_ERROR]"),
    Query::new(
        "getLatestUserMessage",
        Input::Args(&["sessionId", "cwd"]),
        "the last prompt of a conversation, read from the end of its session file",
        get_latest_user_message,
    ),
    Query::new(
        "listSessions",
        Input::StdinJson,
        "the conversations Claude Code keeps (optional {\"cwd\"}: of that directory), newest first",
        list_sessions_query,
    ),
];

/// Lines of a session file read for its summary (the cwd and the first prompt come early).
pub const SUMMARY_LINES: usize = 200;

/// Session files looked at by [`list_sessions`] (the newest ones).
pub const MAX_LISTED: usize = 1000;

pub use bridge_core::query::SessionSummary;

/// The `cwd` and first prompt of a conversation, from the first [`SUMMARY_LINES`] lines of its
/// session file (`None`s for what they do not have).
pub fn session_head<R: BufRead>(mut reader: R) -> io::Result<(Option<String>, Option<String>)> {
    #[derive(Deserialize)]
    struct Cwd {
        #[serde(default)]
        cwd: Option<String>,
    }
    let mut buf = Vec::new();
    let (mut cwd, mut title) = (None, None);
    for _ in 0..SUMMARY_LINES {
        let Some(kept) = read_line_bounded(&mut reader, &mut buf, MAX_ENTRY_BYTES)? else {
            break;
        };
        let Some(raw) = kept.then(|| parse_line(&buf).ok().flatten()).flatten() else {
            continue;
        };
        let Ok(head) = serde_json::from_str::<Head>(raw.get()) else {
            continue;
        };
        if head.is_sidechain {
            continue;
        }
        if cwd.is_none() {
            cwd = serde_json::from_str::<Cwd>(raw.get())
                .ok()
                .and_then(|c| c.cwd);
        }
        if title.is_none() && head.user_row() == UserRow::Prompt {
            title = head
                .prompt_text()
                .and_then(|text| SessionSummary::title_of(&text));
        }
        if cwd.is_some() && title.is_some() {
            break;
        }
    }
    Ok((cwd, title))
}

/// The conversations under `config_dir` that have a prompt, newest first: those of `cwd`'s
/// project directory (whose entries ran in `cwd`), or of every project without one. At most
/// the [`MAX_LISTED`] newest files are read.
pub fn list_sessions(config_dir: &Path, cwd: Option<&str>) -> Vec<SessionSummary> {
    let projects = config_dir.join("projects");
    let dirs: Vec<PathBuf> = match cwd {
        Some(cwd) => vec![projects.join(project_dir_name(cwd))],
        None => std::fs::read_dir(&projects)
            .into_iter()
            .flatten()
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.is_dir())
            .collect(),
    };
    let mut files: Vec<(std::time::SystemTime, String, PathBuf)> = dirs
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).into_iter().flatten())
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let path = entry.path();
            let id = path
                .file_name()?
                .to_str()?
                .strip_suffix(".jsonl")?
                .to_string();
            bridge_core::request::check_session_id(&id).ok()?;
            let modified = entry.metadata().ok()?.modified().ok()?;
            Some((modified, id, path))
        })
        .collect();
    files.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    files.truncate(MAX_LISTED);
    files
        .into_iter()
        .filter_map(|(modified, session_id, path)| {
            let file = std::fs::File::open(&path).ok()?;
            let (found_cwd, title) = session_head(io::BufReader::new(file)).ok()?;
            // Nothing to load without a prompt.
            title.as_ref()?;
            let session_cwd = match (found_cwd, cwd) {
                // The directory name is lossy: another cwd can share it.
                (Some(found), Some(wanted)) if found != wanted => return None,
                (Some(found), _) => found,
                (None, Some(wanted)) => wanted.to_string(),
                (None, None) => return None,
            };
            Some(SessionSummary {
                session_id,
                cwd: session_cwd,
                title,
                updated_at: Some(bridge_core::permission_ipc::iso8601(modified)),
            })
        })
        .collect()
}

/// Claude Code's configuration directory: `CLAUDE_CONFIG_DIR`, else `~/.claude`.
pub fn config_dir(env: &sdk_probe::ProbeEnv) -> Option<PathBuf> {
    if let Some(dir) = env.var_non_empty("CLAUDE_CONFIG_DIR") {
        return Some(PathBuf::from(dir));
    }
    env.home().map(|home| home.join(".claude"))
}

/// Longest project directory name Claude Code keeps whole; a longer one is cut to this many
/// characters and gets a hash of the path (Claude Code 2.1.197's `sanitizePath`).
const MAX_PROJECT_DIR_NAME: usize = 200;

/// The directory name Claude Code gives a working directory under `projects/`: every
/// character but ASCII letters and digits becomes `-` (one per UTF-16 unit, as the CLI's
/// JavaScript replaces them); a name longer than 200 characters is cut to 200 and gets `-`
/// and the path's hash (the JavaScript `(h << 5) - h + unit | 0` over its UTF-16 units, its
/// absolute value in base 36), as the CLI names it.
///
/// ```
/// use bridge_channel_claude::history::project_dir_name;
/// assert_eq!(project_dir_name("/home/me/my_app.rs"), "-home-me-my-app-rs");
/// assert_eq!(project_dir_name("/tmp/café"), "-tmp-caf-");
/// let long = format!("/{}", "a".repeat(250));
/// assert!(project_dir_name(&long).starts_with(&format!("-{}-", "a".repeat(199))));
/// ```
pub fn project_dir_name(cwd: &str) -> String {
    let mut name = String::with_capacity(cwd.len());
    for c in cwd.chars() {
        if c.is_ascii_alphanumeric() {
            name.push(c);
        } else {
            for _ in 0..c.len_utf16() {
                name.push('-');
            }
        }
    }
    if name.len() <= MAX_PROJECT_DIR_NAME {
        return name;
    }
    // Every character of `name` is ASCII: cutting at a byte index is cutting at a character.
    name.truncate(MAX_PROJECT_DIR_NAME);
    let hash = cwd.encode_utf16().fold(0i32, |h, unit| {
        h.wrapping_shl(5)
            .wrapping_sub(h)
            .wrapping_add(i32::from(unit))
    });
    format!("{name}-{}", base36(hash.unsigned_abs()))
}

/// `n` in base 36 with lowercase digits, as JavaScript's `toString(36)` writes it.
fn base36(mut n: u32) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    let mut out = Vec::new();
    loop {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
        if n == 0 {
            break;
        }
    }
    out.reverse();
    String::from_utf8(out).unwrap_or_default()
}

/// The session file of `session_id` for `cwd` under `config_dir`.
pub fn session_file(config_dir: &Path, cwd: &str, session_id: &str) -> PathBuf {
    config_dir
        .join("projects")
        .join(project_dir_name(cwd))
        .join(format!("{session_id}.jsonl"))
}

/// Whether Claude Code saved anything of `session_id` under `config_dir`: a non-empty
/// `<session_id>.jsonl` in any project directory. Session ids are UUIDs, so the file's
/// directory does not matter, and looking in all of them does not depend on how the CLI
/// spelled the working directory (symlinks, a cwd it resolved itself).
///
/// Claude Code buffers transcript writes for 100 ms: a process killed within that time of its
/// first turn leaves no file, and `--resume` of that id would fail with "No conversation found".
pub fn session_saved(config_dir: &Path, session_id: &str) -> bool {
    let Ok(projects) = std::fs::read_dir(config_dir.join("projects")) else {
        return false;
    };
    let file = format!("{session_id}.jsonl");
    projects.flatten().any(|dir| {
        std::fs::metadata(dir.path().join(&file)).is_ok_and(|meta| meta.is_file() && meta.len() > 0)
    })
}

/// The fields of an entry the history needs (the rest stays in the raw line).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    uuid: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    parent_uuid: Option<Cow<'a, str>>,
    /// Set on the first entry after a compaction, whose `parentUuid` is null.
    #[serde(borrow, default)]
    logical_parent_uuid: Option<Cow<'a, str>>,
    #[serde(default)]
    is_sidechain: bool,
    #[serde(default)]
    is_meta: bool,
    #[serde(default)]
    is_compact_summary: bool,
    #[serde(borrow, default)]
    message: Option<&'a RawValue>,
    /// What an `attachment` entry carries (read only for those).
    #[serde(borrow, default)]
    attachment: Option<&'a RawValue>,
}

/// The fields of an `attachment` entry's attachment that mark a task notification.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Attachment {
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    command_mode: Option<String>,
    #[serde(default)]
    prompt: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    content: Option<Content<'a>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Content<'a> {
    Text(#[serde(borrow)] Cow<'a, str>),
    Blocks(Vec<Block<'a>>),
}

#[derive(Deserialize)]
struct Block<'a> {
    #[serde(borrow, default, rename = "type")]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
}

/// What a user entry is.
#[derive(Debug, PartialEq, Eq)]
enum UserRow {
    /// Something the user typed (text, images).
    Prompt,
    /// The interrupt marker.
    Interrupted,
    /// Tool results, meta rows, compaction summaries: not a prompt.
    Other,
}

impl Head<'_> {
    fn is_message(&self) -> bool {
        matches!(self.kind.as_deref(), Some("user" | "assistant"))
    }

    /// A background task's report that Claude Code queued as an `attachment` entry (a
    /// `queued_command` in `task-notification` mode, the `<task-notification>` XML in its
    /// prompt), as the user row the plugin shows for it: `{type:"user", message:{role:"user",
    /// content:<the XML>}}`. The plugin's parser forwards only user and assistant rows, and
    /// its subagent cards find the report in such a row (the carrier a live turn uses).
    fn task_notification_row(&self) -> Option<Box<RawValue>> {
        if self.kind.as_deref() != Some("attachment") {
            return None;
        }
        let attachment: Attachment = serde_json::from_str(self.attachment?.get()).ok()?;
        let prompt = attachment.prompt?;
        let xml = prompt.as_str()?;
        if attachment.kind.as_deref() != Some("queued_command")
            || attachment.command_mode.as_deref() != Some("task-notification")
            || !xml.contains("<task-notification")
        {
            return None;
        }
        let row = serde_json::json!({"type": "user", "message": {"role": "user", "content": xml}});
        RawValue::from_string(row.to_string()).ok()
    }

    fn user_row(&self) -> UserRow {
        if self.kind.as_deref() != Some("user") || self.is_meta || self.is_compact_summary {
            return UserRow::Other;
        }
        let content = self
            .message
            .and_then(|m| serde_json::from_str::<Message>(m.get()).ok())
            .and_then(|m| m.content);
        match content {
            Some(Content::Text(text)) if text.starts_with(INTERRUPTED) => UserRow::Interrupted,
            Some(Content::Text(text)) if !text.trim().is_empty() => UserRow::Prompt,
            Some(Content::Blocks(blocks)) => {
                let kind = |b: &Block| b.kind.as_deref().unwrap_or_default().to_string();
                if blocks.iter().any(|b| kind(b) == "tool_result") || blocks.is_empty() {
                    UserRow::Other
                } else if blocks.iter().all(|b| {
                    kind(b) == "text" && b.text.as_deref().unwrap_or("").starts_with(INTERRUPTED)
                }) {
                    UserRow::Interrupted
                } else {
                    UserRow::Prompt
                }
            }
            _ => UserRow::Other,
        }
    }
}

impl Head<'_> {
    /// The text of a user entry: its string content, else its text blocks joined.
    fn prompt_text(&self) -> Option<String> {
        let message = serde_json::from_str::<Message>(self.message?.get()).ok()?;
        let text = match message.content? {
            Content::Text(text) => text.into_owned(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter(|b| b.kind.as_deref() == Some("text"))
                .filter_map(|b| b.text.as_deref())
                .collect::<Vec<_>>()
                .join(" "),
        };
        (!text.trim().is_empty()).then_some(text)
    }
}

/// Notes about lines that were skipped, bounded.
#[derive(Debug, Default)]
struct Notes {
    notes: Vec<String>,
    more: usize,
}

impl Notes {
    fn push(&mut self, note: String) {
        if self.notes.len() < MAX_NOTES {
            self.notes.push(note);
        } else {
            self.more += 1;
        }
    }

    fn finish(mut self) -> Vec<String> {
        if self.more > 0 {
            self.notes.push(format!("{} more lines skipped", self.more));
        }
        self.notes
    }
}

/// The messages of a conversation, and notes about the lines that could not be read.
#[derive(Debug, Default)]
pub struct History {
    /// The `user` and `assistant` entries of the active chain, oldest first, as written.
    pub messages: Vec<Box<RawValue>>,
    /// One note per skipped line (corrupt JSON, not UTF-8, too long).
    pub notes: Vec<String>,
}

/// Reads the next line (without its `\n`) into `buf`; lines longer than `max` are consumed but
/// not kept: `Ok(Some(false))`.
fn read_line_bounded<R: BufRead>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<Option<bool>> {
    buf.clear();
    let mut too_long = false;
    let mut any = false;
    loop {
        let available = reader.fill_buf()?;
        if available.is_empty() {
            return Ok(any.then_some(!too_long));
        }
        any = true;
        let (chunk, done) = match memchr(available) {
            Some(i) => (&available[..i], Some(i + 1)),
            None => (available, None),
        };
        if !too_long && buf.len() + chunk.len() <= max {
            buf.extend_from_slice(chunk);
        } else {
            too_long = true;
            buf.clear();
        }
        let used = done.unwrap_or(available.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(Some(!too_long));
        }
    }
}

fn memchr(bytes: &[u8]) -> Option<usize> {
    bytes.iter().position(|b| *b == b'\n')
}

/// A line as an entry: its raw JSON, or why it was skipped.
fn parse_line(bytes: &[u8]) -> Result<Option<Box<RawValue>>, String> {
    let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())?;
    let text = text.trim();
    if text.is_empty() {
        return Ok(None);
    }
    serde_json::from_str::<Box<RawValue>>(text)
        .map(Some)
        .map_err(|e| format!("not JSON ({e})"))
}

/// The user prompt whose file checkpoint covers `message_id`: the entry itself or, following
/// parent links, the prompt of its turn, when a `file-history-snapshot` entry was taken for
/// it; `None` otherwise (the walk stops at the first prompt: an earlier turn's checkpoint would
/// undo that turn too). Claude Code keeps one checkpoint per prompt, keyed by the prompt's
/// uuid; the plugin may name another entry of the same turn (a tool result, an answer). The
/// file is read line by line as [`active_chain`] reads it; unreadable lines are skipped.
pub fn checkpointed_prompt<R: BufRead>(
    mut reader: R,
    message_id: &str,
) -> io::Result<Option<String>> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Line {
        #[serde(default, rename = "type")]
        kind: Option<String>,
        #[serde(default)]
        uuid: Option<String>,
        #[serde(default)]
        parent_uuid: Option<String>,
        #[serde(default)]
        snapshot: Option<Snapshot>,
        #[serde(default)]
        message: Option<serde_json::Value>,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Snapshot {
        #[serde(default)]
        message_id: Option<String>,
    }
    // uuid → (parent, is a prompt: a user entry that is not a tool result).
    let mut entries: HashMap<String, (Option<String>, bool)> = HashMap::new();
    let mut checkpointed: HashSet<String> = HashSet::new();
    let mut buf = Vec::new();
    while let Some(kept) = read_line_bounded(&mut reader, &mut buf, MAX_ENTRY_BYTES)? {
        let Some(line) = kept
            .then(|| serde_json::from_slice::<Line>(&buf).ok())
            .flatten()
        else {
            continue;
        };
        if line.kind.as_deref() == Some("file-history-snapshot") {
            checkpointed.extend(line.snapshot.and_then(|s| s.message_id));
        } else if let Some(uuid) = line.uuid {
            let content = line.message.as_ref().map(|m| &m["content"]);
            let tool_result = content
                .and_then(serde_json::Value::as_array)
                .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"));
            let prompt = line.kind.as_deref() == Some("user") && !tool_result;
            entries.insert(uuid, (line.parent_uuid, prompt));
        }
    }
    let mut at = Some(message_id.to_string());
    for _ in 0..=entries.len() {
        let Some(id) = at else { break };
        if checkpointed.contains(&id) {
            return Ok(Some(id));
        }
        let Some((parent, prompt)) = entries.get(&id) else {
            break;
        };
        if *prompt {
            break;
        }
        at = parent.clone();
    }
    Ok(None)
}

/// The active conversation of a session file: the chain of parent links back from the last
/// entry that has a `uuid` (sidechain entries aside), oldest first; of it the `user` and
/// `assistant` entries, without the interrupt markers. Entries on branches a rewind or an edit
/// left behind are not in it. The file is read line by line; a line that is not JSON, not
/// UTF-8 or longer than [`MAX_ENTRY_BYTES`] is skipped with a note. A parent link to an entry
/// the file does not have ends the chain there (with a note).
pub fn active_chain<R: BufRead>(mut reader: R) -> io::Result<History> {
    struct Entry {
        raw: Box<RawValue>,
        parent: Option<String>,
        keep: bool,
    }
    let mut entries: Vec<Entry> = Vec::new();
    let mut by_uuid: HashMap<String, usize> = HashMap::new();
    let mut last = None;
    let mut notes = Notes::default();
    let mut buf = Vec::new();
    let mut number = 0usize;
    while let Some(fits) = read_line_bounded(&mut reader, &mut buf, MAX_ENTRY_BYTES)? {
        number += 1;
        if !fits {
            notes.push(format!(
                "line {number} is longer than {} MiB; skipped",
                MAX_ENTRY_BYTES >> 20
            ));
            continue;
        }
        let raw = match parse_line(&buf) {
            Ok(Some(raw)) => raw,
            Ok(None) => continue,
            Err(why) => {
                notes.push(format!("line {number} is {why}; skipped"));
                continue;
            }
        };
        let Ok(head) = serde_json::from_str::<Head>(raw.get()) else {
            // Valid JSON of another shape (an array, a scalar): not an entry.
            notes.push(format!("line {number} is not a session entry; skipped"));
            continue;
        };
        let Some(uuid) = head.uuid.as_deref().map(str::to_string) else {
            continue;
        };
        let parent = head
            .parent_uuid
            .as_deref()
            .or(head.logical_parent_uuid.as_deref())
            .map(str::to_string);
        let row = head.task_notification_row();
        let keep = row.is_some() || (head.is_message() && head.user_row() != UserRow::Interrupted);
        let sidechain = head.is_sidechain;
        drop(head);
        let raw = row.unwrap_or(raw);
        let index = entries.len();
        entries.push(Entry { raw, parent, keep });
        by_uuid.insert(uuid, index);
        if !sidechain {
            last = Some(index);
        }
    }
    let mut chain = Vec::new();
    let mut next = last;
    while let Some(index) = next {
        // A cycle of parent links cannot be longer than the file.
        if chain.len() > entries.len() {
            notes.push("the parent links form a cycle; the history stops there".into());
            break;
        }
        chain.push(index);
        next = match entries[index].parent.as_deref() {
            None => None,
            Some(parent) => match by_uuid.get(parent) {
                Some(parent) => Some(*parent),
                None => {
                    notes.push(format!(
                        "an entry's parent {parent} is not in the file; the history starts after it"
                    ));
                    None
                }
            },
        };
    }
    let mut slots: Vec<Option<Entry>> = entries.into_iter().map(Some).collect();
    let mut messages = Vec::new();
    for index in chain.into_iter().rev() {
        if let Some(entry) = slots[index].take()
            && entry.keep
        {
            messages.push(entry.raw);
        }
    }
    Ok(History {
        messages,
        notes: notes.finish(),
    })
}

/// The last prompt of a session file (a `user` entry the user typed: no tool results, meta
/// rows, compaction summaries or interrupt markers), read from the end: the last
/// [`TAIL_WINDOW`] bytes first, then twice as much before them, and so on, so a long file is
/// not read whole when its last prompt is near the end. Lines that cannot be read are skipped
/// with a note.
pub fn latest_user_message<R: Read + Seek>(
    mut reader: R,
) -> io::Result<(Option<Box<RawValue>>, Vec<String>)> {
    let mut notes = Notes::default();
    let mut pos = reader.seek(SeekFrom::End(0))?;
    // The start of a line whose beginning lies before `pos` (read in the previous round).
    let mut carry: Vec<u8> = Vec::new();
    let mut window = TAIL_WINDOW;
    let mut from_end = 0usize;
    loop {
        let start = pos.saturating_sub(window);
        let mut buf = vec![0u8; (pos - start) as usize];
        reader.seek(SeekFrom::Start(start))?;
        reader.read_exact(&mut buf)?;
        buf.extend_from_slice(&carry);
        // Lines that are complete: all of them at the start of the file, else those after the
        // first newline (the bytes before it end a line that began earlier).
        let first = if start == 0 {
            Some(0)
        } else {
            memchr(&buf).map(|i| i + 1)
        };
        if let Some(first) = first {
            for line in buf[first..].rsplit(|b| *b == b'\n') {
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                from_end += 1;
                if line.len() > MAX_ENTRY_BYTES {
                    notes.push(format!("line {from_end} from the end is too long; skipped"));
                    continue;
                }
                let raw = match parse_line(line) {
                    Ok(Some(raw)) => raw,
                    Ok(None) => continue,
                    Err(why) => {
                        notes.push(format!("line {from_end} from the end is {why}; skipped"));
                        continue;
                    }
                };
                if let Ok(head) = serde_json::from_str::<Head>(raw.get())
                    && !head.is_sidechain
                    && head.user_row() == UserRow::Prompt
                {
                    return Ok((Some(raw), notes.finish()));
                }
            }
            carry = buf[..first.saturating_sub(1)].to_vec();
        } else {
            carry = buf;
        }
        if start == 0 {
            return Ok((None, notes.finish()));
        }
        if carry.len() > MAX_ENTRY_BYTES {
            // One line longer than any entry: skip its rest too.
            notes.push("a line longer than the entry limit was skipped".into());
            carry.clear();
            let skip_to = memchr_back(&mut reader, start)?;
            pos = skip_to;
        } else {
            pos = start;
        }
        window = window.saturating_mul(2).min(MAX_ENTRY_BYTES as u64);
    }
}

/// The offset just after the last `\n` before `end` (0 when there is none).
fn memchr_back<R: Read + Seek>(reader: &mut R, end: u64) -> io::Result<u64> {
    let mut end = end;
    let mut chunk = vec![0u8; 64 * 1024];
    while end > 0 {
        let start = end.saturating_sub(chunk.len() as u64);
        let len = (end - start) as usize;
        reader.seek(SeekFrom::Start(start))?;
        reader.read_exact(&mut chunk[..len])?;
        if let Some(i) = chunk[..len].iter().rposition(|b| *b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

/// The session file for the query's `<sessionId> <cwd>`, after checking the id as `send` does.
fn file_of(request: &QueryRequest) -> Result<PathBuf, QueryError> {
    let (session_id, cwd) = request.session_and_cwd()?;
    Ok(session_file(&claude_dir()?, cwd, session_id))
}

/// This process's [`config_dir`], or why there is none.
fn claude_dir() -> Result<PathBuf, QueryError> {
    config_dir(&sdk_probe::ProbeEnv::from_process()).ok_or_else(|| {
        QueryError::Failed(
            "cannot find Claude Code's directory: neither CLAUDE_CONFIG_DIR nor HOME is set".into(),
        )
    })
}

/// Opens `path`; a file that does not exist is `None` (a session with no history yet).
fn open(path: &Path) -> Result<Option<std::fs::File>, QueryError> {
    match std::fs::File::open(path) {
        Ok(file) => Ok(Some(file)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(QueryError::Failed(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

async fn blocking<T: Send + 'static>(
    job: impl FnOnce() -> Result<T, QueryError> + Send + 'static,
) -> Result<T, QueryError> {
    tokio::task::spawn_blocking(job)
        .await
        .map_err(|e| QueryError::Failed(format!("the history reader stopped: {e}")))?
}

fn get_session(request: QueryRequest) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let path = file_of(&request)?;
        blocking(move || {
            let history = match open(&path)? {
                Some(file) => active_chain(io::BufReader::with_capacity(256 * 1024, file))
                    .map_err(|e| {
                        QueryError::Failed(format!("cannot read {}: {e}", path.display()))
                    })?,
                None => History::default(),
            };
            #[derive(Serialize)]
            struct Body<'a> {
                success: bool,
                messages: &'a [Box<RawValue>],
            }
            let reply = QueryReply::serialized(&Body {
                success: true,
                messages: &history.messages,
            })?;
            Ok(reply.with_notes(history.notes))
        })
        .await
    })
}

fn list_sessions_query(
    request: QueryRequest,
) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let cwd = request.cwd_filter()?;
        let dir = claude_dir()?;
        blocking(move || {
            #[derive(Serialize)]
            struct Body {
                success: bool,
                sessions: Vec<SessionSummary>,
            }
            QueryReply::serialized(&Body {
                success: true,
                sessions: list_sessions(&dir, cwd.as_deref()),
            })
        })
        .await
    })
}

fn get_latest_user_message(
    request: QueryRequest,
) -> BoxFuture<'static, Result<QueryReply, QueryError>> {
    Box::pin(async move {
        let path = file_of(&request)?;
        blocking(move || {
            let (message, notes) = match open(&path)? {
                Some(file) => latest_user_message(file).map_err(|e| {
                    QueryError::Failed(format!("cannot read {}: {e}", path.display()))
                })?,
                None => (None, Vec::new()),
            };
            #[derive(Serialize)]
            struct Body {
                success: bool,
                message: Option<Box<RawValue>>,
            }
            let reply = QueryReply::serialized(&Body {
                success: true,
                message,
            })?;
            Ok(reply.with_notes(notes))
        })
        .await
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn listed_sessions_are_those_with_a_prompt_in_the_cwd_with_their_first_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let write = |cwd: &str, id: &str, lines: &[Value]| {
            let path = session_file(dir.path(), cwd, id);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
            std::fs::write(path, text).unwrap();
        };
        let prompt = |cwd: &str, text: Value| {
            json!({"type": "user", "uuid": "u1", "parentUuid": null, "cwd": cwd,
                "message": {"role": "user", "content": text}})
        };
        write(
            "/p/a",
            "s-1",
            &[
                json!({"type": "queue-operation"}),
                prompt("/p/a", json!("  fix\n the   test  ")),
            ],
        );
        write(
            "/p/a",
            "s-2",
            &[prompt("/p/a", json!([{"type": "text", "text": "second"}]))],
        );
        // Same directory name, another cwd; and a file with no prompt.
        write("/p_a", "s-3", &[prompt("/p_a", json!("other"))]);
        write("/p/a", "s-4", &[json!({"type": "summary", "summary": "x"})]);
        let mut listed = list_sessions(dir.path(), Some("/p/a"));
        listed.sort_by(|a, b| a.session_id.cmp(&b.session_id));
        let ids: Vec<(&str, Option<&str>)> = listed
            .iter()
            .map(|s| (s.session_id.as_str(), s.title.as_deref()))
            .collect();
        assert_eq!(
            ids,
            [("s-1", Some("fix the test")), ("s-2", Some("second"))]
        );
        assert!(
            listed
                .iter()
                .all(|s| s.cwd == "/p/a" && s.updated_at.is_some())
        );
        assert_eq!(list_sessions(dir.path(), None).len(), 3);
        assert!(list_sessions(dir.path(), Some("/nowhere")).is_empty());
    }

    /// Long paths: the names Claude Code 2.1.197's own `sanitizePath` gives them (its
    /// function, run in Node on these paths).
    #[test]
    fn long_paths_are_cut_and_hashed_as_claude_code_names_them() {
        for (cwd, name) in [
            (
                "/tmp/xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
                "-tmp-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx-qfhvtz",
            ),
            (
                "/home/é/ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_ab_😀",
                "-home---ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab--steeju",
            ),
        ] {
            assert_eq!(project_dir_name(cwd), name, "{cwd}");
        }
    }

    fn user(uuid: &str, parent: Option<&str>, text: &str) -> String {
        json!({"type": "user", "uuid": uuid, "parentUuid": parent, "isSidechain": false,
               "message": {"role": "user", "content": text}})
        .to_string()
    }

    fn assistant(uuid: &str, parent: &str, text: &str) -> String {
        json!({"type": "assistant", "uuid": uuid, "parentUuid": parent, "isSidechain": false,
               "message": {"role": "assistant", "content": [{"type": "text", "text": text}]}})
        .to_string()
    }

    fn texts(messages: &[Box<RawValue>]) -> Vec<String> {
        messages
            .iter()
            .map(|raw| {
                let v: Value = serde_json::from_str(raw.get()).unwrap();
                let content = &v["message"]["content"];
                content
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| content[0]["text"].as_str().unwrap_or("?").to_string())
            })
            .collect()
    }

    fn chain(lines: &[String]) -> History {
        active_chain(lines.join("\n").as_bytes()).unwrap()
    }

    #[test]
    fn the_chain_follows_parent_links_and_drops_abandoned_branches() {
        let lines = [
            r#"{"type":"queue-operation","operation":"enqueue"}"#.to_string(),
            user("u1", None, "first"),
            json!({"type": "attachment", "uuid": "a1", "parentUuid": "u1", "attachment": {}})
                .to_string(),
            assistant("r1", "a1", "answer 1"),
            user("u2", Some("r1"), "second, later edited"),
            assistant("r2", "u2", "answer 2 (abandoned)"),
            // The edit branches off r1 again.
            user("u2b", Some("r1"), "second, edited"),
            assistant("r2b", "u2b", "answer 2b"),
            r#"{"type":"last-prompt","leafUuid":"r2b"}"#.to_string(),
        ];
        let history = chain(&lines);
        assert_eq!(
            texts(&history.messages),
            ["first", "answer 1", "second, edited", "answer 2b"]
        );
        assert!(history.notes.is_empty(), "{:?}", history.notes);
        // The entries are the file's own bytes.
        assert_eq!(history.messages[0].get(), lines[1]);
    }

    #[test]
    fn interrupt_markers_are_dropped_but_still_link_the_chain() {
        let lines = [
            user("u1", None, "first"),
            assistant("r1", "u1", "partial"),
            user("i1", Some("r1"), "[Request interrupted by user]"),
            json!({"type": "user", "uuid": "i2", "parentUuid": "i1",
                   "message": {"role": "user", "content": [{"type": "text", "text": "[Request interrupted by user for tool use]"}]}})
            .to_string(),
            user("u2", Some("i2"), "again"),
        ];
        assert_eq!(
            texts(&chain(&lines).messages),
            ["first", "partial", "again"]
        );
    }

    #[test]
    fn a_queued_task_notification_becomes_a_user_row_and_other_attachments_stay_out() {
        let xml = "<task-notification><task-id>t1</task-id><tool-use-id>toolu_1</tool-use-id>\
                   <status>completed</status><result>the report</result></task-notification>";
        let queued = |uuid: &str, parent: &str, mode: &str, prompt: Value| {
            json!({"type": "attachment", "uuid": uuid, "parentUuid": parent,
                   "attachment": {"type": "queued_command", "commandMode": mode, "prompt": prompt}})
            .to_string()
        };
        let lines = [
            user("u1", None, "start a background agent"),
            assistant("r1", "u1", "launched"),
            queued("a1", "r1", "task-notification", json!(xml)),
            // A prompt queued while a turn ran, and a notification whose prompt is not text:
            // links of the chain, not rows.
            queued("a2", "a1", "prompt", json!("typed ahead")),
            queued("a3", "a2", "task-notification", json!([{"type": "text"}])),
            assistant("r2", "a3", "the agent reported"),
        ];
        let history = chain(&lines);
        assert_eq!(
            texts(&history.messages),
            [
                "start a background agent",
                "launched",
                xml,
                "the agent reported"
            ]
        );
        let row: Value = serde_json::from_str(history.messages[2].get()).unwrap();
        assert_eq!(
            row,
            json!({"type": "user", "message": {"role": "user", "content": xml}})
        );
        assert!(history.notes.is_empty(), "{:?}", history.notes);
    }

    #[test]
    fn corrupt_lines_are_skipped_with_a_note() {
        let mut bytes = Vec::new();
        bytes.extend_from_slice(user("u1", None, "first").as_bytes());
        bytes.extend_from_slice(b"\n{\"type\":\"user\",\"uuid\":\"broken\n");
        bytes.extend_from_slice(b"\xff\xfe not utf-8\n[1,2]\n\n");
        bytes.extend_from_slice(assistant("r1", "u1", "answer").as_bytes());
        let history = active_chain(bytes.as_slice()).unwrap();
        assert_eq!(texts(&history.messages), ["first", "answer"]);
        assert_eq!(history.notes.len(), 3, "{:?}", history.notes);
        assert!(history.notes[0].starts_with("line 2 is not JSON"));
        assert_eq!(history.notes[1], "line 3 is not UTF-8; skipped");
        assert_eq!(history.notes[2], "line 4 is not a session entry; skipped");
    }

    #[test]
    fn a_missing_parent_and_a_cycle_end_the_chain_with_a_note() {
        let history = chain(&[
            assistant("r1", "gone", "orphan"),
            user("u2", Some("r1"), "next"),
        ]);
        assert_eq!(texts(&history.messages), ["orphan", "next"]);
        assert!(history.notes[0].contains("gone"), "{:?}", history.notes);
        let history = chain(&[assistant("a", "b", "x"), assistant("b", "a", "y")]);
        assert!(history.messages.len() <= 3);
        assert!(history.notes[0].contains("cycle"), "{:?}", history.notes);
    }

    #[test]
    fn sidechain_entries_do_not_pick_the_leaf_and_compaction_keeps_the_history() {
        let lines = [
            user("u1", None, "before compaction"),
            json!({"type": "system", "subtype": "compact_boundary", "uuid": "c1",
                   "parentUuid": null, "logicalParentUuid": "u1"})
            .to_string(),
            user("u2", Some("c1"), "after compaction"),
            json!({"type": "assistant", "uuid": "s1", "parentUuid": "x", "isSidechain": true,
                   "message": {"content": [{"type": "text", "text": "subagent"}]}})
            .to_string(),
        ];
        assert_eq!(
            texts(&chain(&lines).messages),
            ["before compaction", "after compaction"]
        );
    }

    #[test]
    fn the_checkpoint_of_a_turn_is_its_prompt_s() {
        let lines = [
            user("u1", None, "make a file"),
            json!({"type": "file-history-snapshot", "messageId": "u1",
                   "snapshot": {"messageId": "u1", "trackedFileBackups": {}}})
            .to_string(),
            assistant("a1", "u1", "writing"),
            "{broken".to_string(),
            json!({"type": "user", "uuid": "t1", "parentUuid": "a1", "message": {"role": "user",
                   "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]}})
            .to_string(),
            assistant("a2", "t1", "done"),
            user("u2", Some("a2"), "no checkpoint here"),
        ]
        .join("\n");
        let find = |id: &str| checkpointed_prompt(lines.as_bytes(), id).unwrap();
        assert_eq!(find("a2").as_deref(), Some("u1"));
        assert_eq!(find("t1").as_deref(), Some("u1"));
        assert_eq!(find("u1").as_deref(), Some("u1"));
        // u2's turn has no checkpoint: u1's would undo u1's turn too.
        assert_eq!(find("u2"), None);
        assert_eq!(find("unknown"), None);
        // A parent cycle ends the walk.
        let cycle = [user("x", Some("y"), "a"), user("y", Some("x"), "b")].join("\n");
        assert_eq!(checkpointed_prompt(cycle.as_bytes(), "x").unwrap(), None);
    }

    #[test]
    fn an_empty_file_has_no_messages() {
        let history = active_chain(&b""[..]).unwrap();
        assert!(history.messages.is_empty() && history.notes.is_empty());
    }

    #[test]
    fn overlong_lines_are_skipped_without_being_kept() {
        let mut reader = io::BufReader::with_capacity(8, &b"0123456789abcdef\nok\nlast"[..]);
        let mut buf = Vec::new();
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 10).unwrap(),
            Some(false)
        );
        assert!(buf.is_empty());
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 10).unwrap(),
            Some(true)
        );
        assert_eq!(buf, b"ok");
        assert_eq!(
            read_line_bounded(&mut reader, &mut buf, 10).unwrap(),
            Some(true)
        );
        assert_eq!(buf, b"last");
        assert_eq!(read_line_bounded(&mut reader, &mut buf, 10).unwrap(), None);
    }

    fn latest(text: &str) -> (Option<String>, Vec<String>) {
        let (raw, notes) = latest_user_message(io::Cursor::new(text.as_bytes().to_vec())).unwrap();
        (raw.map(|r| texts(&[r]).remove(0)), notes)
    }

    #[test]
    fn the_latest_prompt_skips_tool_results_meta_rows_and_interrupts() {
        let tool_result = json!({"type": "user", "uuid": "t", "parentUuid": "r2",
            "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "x", "content": "ok"}]}});
        let meta = json!({"type": "user", "uuid": "m", "isMeta": true, "parentUuid": "t",
            "message": {"role": "user", "content": "<local-command-caveat>"}});
        let lines = [
            user("u1", None, "first"),
            assistant("r1", "u1", "a"),
            user("u2", Some("r1"), "second"),
            assistant("r2", "u2", "b"),
            tool_result.to_string(),
            meta.to_string(),
            user("i", Some("m"), "[Request interrupted by user]"),
            r#"{"type":"last-prompt"}"#.to_string(),
            "{corrupt".to_string(),
        ];
        let (message, notes) = latest(&(lines.join("\n") + "\n"));
        assert_eq!(message.as_deref(), Some("second"));
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(
            notes[0].starts_with("line 1 from the end is not JSON"),
            "{notes:?}"
        );
        assert_eq!(latest("").0, None);
        assert_eq!(latest(&assistant("r", "u", "only answers")).0, None);
    }

    #[test]
    fn the_latest_prompt_is_found_beyond_the_first_window_and_across_its_edges() {
        // A prompt far from the end, and a prompt line longer than the first window.
        let filler = assistant("r", "u", &"x".repeat(1000));
        for prompt in ["far away".to_string(), "y".repeat(3 * TAIL_WINDOW as usize)] {
            let mut lines = vec![user("u0", None, "oldest"), user("u1", None, &prompt)];
            lines.extend(std::iter::repeat_n(filler.clone(), 200));
            let (message, notes) = latest(&lines.join("\n"));
            assert_eq!(message.as_deref(), Some(prompt.as_str()));
            assert!(notes.is_empty(), "{notes:?}");
        }
    }

    #[test]
    fn the_latest_prompt_read_stays_near_the_end() {
        /// A reader that counts the bytes read.
        struct Counting(io::Cursor<Vec<u8>>, usize);
        impl Read for Counting {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = self.0.read(buf)?;
                self.1 += n;
                Ok(n)
            }
        }
        impl Seek for Counting {
            fn seek(&mut self, pos: SeekFrom) -> io::Result<u64> {
                self.0.seek(pos)
            }
        }
        let filler = assistant("r", "u", &"x".repeat(1000));
        let mut lines: Vec<String> = std::iter::repeat_n(filler, 5000).collect();
        lines.push(user("u", Some("r"), "recent"));
        lines.push(assistant("r9", "u", "reply"));
        let bytes = lines.join("\n").into_bytes();
        let total = bytes.len();
        let mut reader = Counting(io::Cursor::new(bytes), 0);
        let (message, _) = latest_user_message(&mut reader).unwrap();
        assert!(message.is_some());
        assert!(
            reader.1 <= TAIL_WINDOW as usize,
            "read {} of {total} bytes",
            reader.1
        );
    }

    #[test]
    fn the_project_directory_replaces_every_other_character() {
        assert_eq!(project_dir_name("/tmp/a b/ü😀"), "-tmp-a-b----");
        assert_eq!(
            session_file(Path::new("/c"), "/w/x.y", "abc"),
            Path::new("/c/projects/-w-x-y/abc.jsonl")
        );
    }
}
