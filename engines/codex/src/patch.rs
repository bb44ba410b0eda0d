//! File changes: what Codex changed in one file, turned into Claude-shaped Edit/Write inputs.
//!
//! `codex exec --json` reports a `file_change` item with paths and kinds only. The content comes
//! from the thread's rollout (the `FileChange` item there carries the new file's content, the
//! deleted file's content, or a unified diff) or, for a patch Codex refused, from the
//! `apply_patch` input itself ([`parse_apply_patch`]). Both end up as a [`Change`].

use bridge_core::event::{FileDiff, ToolKind};
use serde_json::{Value, json};

/// What happened to one file, with whatever content is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A new file and its content.
    Add {
        /// The content.
        content: String,
    },
    /// A deleted file and its content before.
    Delete {
        /// The content (empty when unknown).
        content: String,
    },
    /// An edited (and possibly moved) file.
    Update {
        /// Hunks in unified-diff form (`@@ … @@` headers, then ` `/`-`/`+` lines).
        unified_diff: String,
        /// The new path when the file was also moved.
        move_path: Option<String>,
    },
}

/// One hunk of a unified diff: the text before and after.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Hunk {
    /// Context and removed lines.
    pub old: String,
    /// Context and added lines.
    pub new: String,
}

/// Splits a unified diff into hunks (a diff without `@@` headers is one hunk).
///
/// ```
/// use bridge_codex::patch::hunks;
/// let h = hunks("@@ -1,2 +1,2 @@\n a\n-b\n+c\n");
/// assert_eq!(h.len(), 1);
/// assert_eq!((h[0].old.as_str(), h[0].new.as_str()), ("a\nb", "a\nc"));
/// ```
pub fn hunks(diff: &str) -> Vec<Hunk> {
    let mut out: Vec<Hunk> = Vec::new();
    let mut current: Option<(Vec<&str>, Vec<&str>)> = None;
    let flush = |current: &mut Option<(Vec<&str>, Vec<&str>)>, out: &mut Vec<Hunk>| {
        if let Some((old, new)) = current.take()
            && !(old.is_empty() && new.is_empty())
        {
            out.push(Hunk {
                old: old.join("\n"),
                new: new.join("\n"),
            });
        }
    };
    for line in diff.lines() {
        if line.starts_with("@@") {
            flush(&mut current, &mut out);
            current = Some((Vec::new(), Vec::new()));
            continue;
        }
        if line.starts_with("---") || line.starts_with("+++") || line.starts_with('\\') {
            continue;
        }
        let (old, new) = current.get_or_insert_with(|| (Vec::new(), Vec::new()));
        if let Some(rest) = line.strip_prefix('-') {
            old.push(rest);
        } else if let Some(rest) = line.strip_prefix('+') {
            new.push(rest);
        } else {
            let rest = line.strip_prefix(' ').unwrap_or(line);
            old.push(rest);
            new.push(rest);
        }
    }
    flush(&mut current, &mut out);
    out
}

/// The Claude-shaped tool a change is shown as: name, input, kind and diff.
///
/// | change | tool | input |
/// |---|---|---|
/// | add | `Write` | `{file_path, content}` |
/// | update, one hunk | `Edit` | `{file_path, old_string, new_string, replace_all:false}` (+ `move_path`) |
/// | update, several hunks | `MultiEdit` | `{file_path, edits:[{old_string, new_string}]}` (+ `move_path`) |
/// | delete | `Delete` | `{file_path}` |
///
/// `change` is `None` when only the path and kind are known (`kind` is Codex's `add`, `update`,
/// `delete`): the input then has just `file_path` and there is no diff.
pub fn tool_for(
    path: &str,
    kind: &str,
    change: Option<&Change>,
) -> (&'static str, Value, ToolKind, Option<FileDiff>) {
    match (kind, change) {
        (_, Some(Change::Add { content })) => (
            "Write",
            json!({"file_path": path, "content": content}),
            ToolKind::Edit,
            Some(FileDiff {
                path: path.to_string(),
                old_text: None,
                new_text: Some(content.clone()),
            }),
        ),
        (_, Some(Change::Delete { content })) => (
            "Delete",
            json!({"file_path": path}),
            ToolKind::Delete,
            Some(FileDiff {
                path: path.to_string(),
                old_text: Some(content.clone()),
                new_text: None,
            }),
        ),
        (
            _,
            Some(Change::Update {
                unified_diff,
                move_path,
            }),
        ) => {
            let parts = hunks(unified_diff);
            let kind = if move_path.is_some() {
                ToolKind::Move
            } else {
                ToolKind::Edit
            };
            let old_text = parts
                .iter()
                .map(|h| h.old.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let new_text = parts
                .iter()
                .map(|h| h.new.as_str())
                .collect::<Vec<_>>()
                .join("\n");
            let (name, mut input) = if parts.len() > 1 {
                let edits: Vec<Value> = parts
                    .iter()
                    .map(|h| json!({"old_string": h.old, "new_string": h.new}))
                    .collect();
                ("MultiEdit", json!({"file_path": path, "edits": edits}))
            } else {
                (
                    "Edit",
                    json!({"file_path": path, "old_string": old_text, "new_string": new_text, "replace_all": false}),
                )
            };
            if let Some(to) = move_path {
                input["move_path"] = Value::String(to.clone());
            }
            let diff = FileDiff {
                path: path.to_string(),
                old_text: Some(old_text),
                new_text: Some(new_text),
            };
            (name, input, kind, Some(diff))
        }
        ("add", None) => ("Write", json!({"file_path": path}), ToolKind::Edit, None),
        ("delete", None) => ("Delete", json!({"file_path": path}), ToolKind::Delete, None),
        (_, None) => ("Edit", json!({"file_path": path}), ToolKind::Edit, None),
    }
}

/// Parses an `apply_patch` input (`*** Begin Patch` … `*** End Patch`) into per-file changes,
/// in order. Paths are as written in the patch (usually relative to the agent's cwd).
///
/// ```
/// use bridge_codex::patch::{parse_apply_patch, Change};
/// let ops = parse_apply_patch("*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Delete File: b.txt\n*** End Patch\n");
/// assert_eq!(ops[0], ("a.txt".to_string(), "add", Change::Add { content: "hi\n".into() }));
/// assert_eq!(ops[1].1, "delete");
/// ```
pub fn parse_apply_patch(patch: &str) -> Vec<(String, &'static str, Change)> {
    let mut out: Vec<(String, &'static str, Change)> = Vec::new();
    for line in patch.lines() {
        if let Some(path) = line.strip_prefix("*** Add File: ") {
            out.push((
                path.trim().to_string(),
                "add",
                Change::Add {
                    content: String::new(),
                },
            ));
        } else if let Some(path) = line.strip_prefix("*** Delete File: ") {
            out.push((
                path.trim().to_string(),
                "delete",
                Change::Delete {
                    content: String::new(),
                },
            ));
        } else if let Some(path) = line.strip_prefix("*** Update File: ") {
            out.push((
                path.trim().to_string(),
                "update",
                Change::Update {
                    unified_diff: String::new(),
                    move_path: None,
                },
            ));
        } else if line.starts_with("*** Begin Patch")
            || line.starts_with("*** End Patch")
            || line.starts_with("*** End of File")
        {
        } else if let Some(to) = line.strip_prefix("*** Move to: ") {
            if let Some((_, _, Change::Update { move_path, .. })) = out.last_mut() {
                *move_path = Some(to.trim().to_string());
            }
        } else if let Some((_, _, change)) = out.last_mut() {
            match change {
                Change::Add { content } => {
                    content.push_str(line.strip_prefix('+').unwrap_or(line));
                    content.push('\n');
                }
                Change::Update { unified_diff, .. } => {
                    unified_diff.push_str(line);
                    unified_diff.push('\n');
                }
                Change::Delete { .. } => {}
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_hunk_update_is_a_multi_edit() {
        let change = Change::Update {
            unified_diff: "@@ -1 +1 @@\n-a\n+b\n@@ -9 +9 @@\n x\n-y\n+z\n".into(),
            move_path: Some("new.txt".into()),
        };
        let (name, input, kind, diff) = tool_for("/w/old.txt", "update", Some(&change));
        assert_eq!(name, "MultiEdit");
        assert_eq!(kind, ToolKind::Move);
        assert_eq!(input["edits"][1]["old_string"], "x\ny");
        assert_eq!(input["move_path"], "new.txt");
        let diff = diff.unwrap();
        assert_eq!(diff.old_text.as_deref(), Some("a\nx\ny"));
        assert_eq!(diff.new_text.as_deref(), Some("b\nx\nz"));
    }

    #[test]
    fn unknown_content_keeps_only_the_path() {
        let (name, input, kind, diff) = tool_for("/w/a.txt", "add", None);
        assert_eq!((name, kind), ("Write", ToolKind::Edit));
        assert_eq!(input, json!({"file_path": "/w/a.txt"}));
        assert!(diff.is_none());
        assert_eq!(tool_for("/w/a", "delete", None).0, "Delete");
        assert_eq!(tool_for("/w/a", "update", None).0, "Edit");
    }

    #[test]
    fn apply_patch_update_and_move() {
        let ops = parse_apply_patch(
            "*** Begin Patch\n*** Update File: a.txt\n*** Move to: b.txt\n@@\n one\n-two\n+2\n*** End Patch",
        );
        assert_eq!(ops.len(), 1);
        let (path, kind, change) = &ops[0];
        assert_eq!((path.as_str(), *kind), ("a.txt", "update"));
        let (name, input, _, _) = tool_for(path, kind, Some(change));
        assert_eq!(name, "Edit");
        assert_eq!(input["old_string"], "one\ntwo");
        assert_eq!(input["new_string"], "one\n2");
        assert_eq!(input["move_path"], "b.txt");
    }
}
