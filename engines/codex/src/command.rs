//! Codex reports commands as the shell invocation it ran (`/bin/bash -lc 'echo hello'`); users
//! want to see `echo hello`. [`display_command`] unwraps the usual login-shell wrapper and leaves
//! anything else as it is.
//!
//! Most of what Codex runs only reads: `cat`, `sed -n`, `ls`, `rg`. Codex itself sorts such
//! commands into actions (read, list files, search) and the plugin's webview has collapsible
//! cards for exactly those (Read, Glob, Grep), so [`classify`] names a command the same way
//! instead of showing everything as `Bash`.

use serde_json::{Value, json};

/// Shells whose `-c` / `-lc` wrapper is unwrapped.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "fish"];

/// The command the user would recognise: the script of `<shell> -lc <script>` (or `-c`), with
/// POSIX quoting undone; the input unchanged when it is not such a wrapper.
///
/// ```
/// use bridge_codex::command::display_command;
/// assert_eq!(display_command("/bin/bash -lc 'echo hello'"), "echo hello");
/// assert_eq!(display_command("/bin/bash -lc 'echo '\\''q'\\'''"), "echo 'q'");
/// assert_eq!(display_command("bash -lc ls"), "ls");
/// assert_eq!(display_command("rg -n foo"), "rg -n foo");
/// ```
pub fn display_command(command: &str) -> String {
    let Some(words) = split(command) else {
        return command.to_string();
    };
    if let [shell, flag, script] = words.as_slice() {
        let name = shell.rsplit('/').next().unwrap_or(shell);
        if SHELLS.contains(&name) && matches!(flag.as_str(), "-c" | "-lc" | "-cl") {
            return script.clone();
        }
    }
    command.to_string()
}

/// What a command does, as far as the tool card goes.
#[derive(Debug, Clone, PartialEq)]
pub struct CommandTool {
    /// `Read`, `Glob` (list files), `Grep` (search) or `Bash`.
    pub name: &'static str,
    /// The tool input: always `command` and `description`; `file_path` (and `offset`/`limit`
    /// for a line range) for a read, `path`/`pattern` for a listing or a search.
    pub input: Value,
}

/// Commands that only reshape another command's output (`rg x | head -20` is still a search).
const PIPE_FILTERS: &[&str] = &["head", "tail", "wc", "sort", "uniq", "cut", "nl", "tr"];

/// Names a command the way the plugin's webview renders it: a read of one file is `Read`
/// (`file_path`), a listing is `Glob` (`path`, `pattern` for `find -name`), a search is `Grep`
/// (`pattern`, `path`), anything else (or anything that writes, chains or redirects) `Bash`.
/// `command` is the script as [`display_command`] shows it.
///
/// ```
/// use bridge_codex::command::classify;
/// let read = classify("sed -n '10,20p' src/lib.rs");
/// assert_eq!(read.name, "Read");
/// assert_eq!(read.input["file_path"], "src/lib.rs");
/// assert_eq!((read.input["offset"].as_u64(), read.input["limit"].as_u64()), (Some(10), Some(11)));
/// assert_eq!(classify("rg -n TODO src | head -5").input["pattern"], "TODO");
/// assert_eq!(classify("ls -la").name, "Glob");
/// assert_eq!(classify("echo hi > x").name, "Bash");
/// ```
pub fn classify(command: &str) -> CommandTool {
    let bash = || CommandTool {
        name: "Bash",
        input: json!({"command": command, "description": describe_bash(command)}),
    };
    let script = strip_cd_prefix(command.trim());
    if ["&&", "||", ";", ">", "<", "$(", "`", "&"]
        .iter()
        .any(|op| script.contains(op))
    {
        return bash();
    }
    let mut stages = script.split('|');
    let first = stages.next().unwrap_or_default();
    let rest_are_filters = stages.all(|stage| {
        split(stage)
            .and_then(|w| w.first().cloned())
            .is_some_and(|p| PIPE_FILTERS.contains(&program_name(&p)))
    });
    if !rest_are_filters {
        return bash();
    }
    let Some(words) = split(first) else {
        return bash();
    };
    let Some((program, args)) = words.split_first() else {
        return bash();
    };
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let classified = match program_name(program) {
        "cat" | "nl" | "less" | "more" => read(command, &args, None),
        "head" | "tail" => read(command, &args, Some(&["-n", "-c"][..])),
        "sed" => sed_read(command, &args),
        "ls" | "tree" => list(
            command,
            operands(&args, &["-I", "-L", "--ignore"]).first().copied(),
            None,
        ),
        "find" => find(command, &args),
        "fd" | "fdfind" => {
            let ops = operands(
                &args,
                &["-e", "-t", "-E", "--extension", "--type", "--exclude"],
            );
            list(command, ops.get(1).copied(), ops.first().copied())
        }
        "rg" | "grep" | "egrep" | "ag" | "ack" => search(command, &args),
        "git" if args.first() == Some(&"grep") => search(command, &args[1..]),
        _ => None,
    };
    classified.unwrap_or_else(bash)
}

/// `cd <dir> && <rest>` → `<rest>` (Codex often prefixes the working directory).
fn strip_cd_prefix(script: &str) -> &str {
    if let Some(rest) = script.strip_prefix("cd ")
        && let Some((dir, after)) = rest.split_once("&&")
        && !dir.trim().contains(char::is_whitespace)
    {
        return after.trim();
    }
    script
}

fn program_name(program: &str) -> &str {
    program.rsplit('/').next().unwrap_or(program)
}

/// The non-flag arguments; flags named in `with_value` consume the next word.
fn operands<'a>(args: &[&'a str], with_value: &[&str]) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut skip = false;
    let mut after_dashes = false;
    for arg in args {
        if skip {
            skip = false;
        } else if after_dashes || !arg.starts_with('-') || *arg == "-" {
            out.push(*arg);
        } else if *arg == "--" {
            after_dashes = true;
        } else if with_value.contains(arg) {
            skip = true;
        }
    }
    out
}

fn read(command: &str, args: &[&str], with_value: Option<&[&str]>) -> Option<CommandTool> {
    let files = operands(args, with_value.unwrap_or(&[]));
    let [file] = files.as_slice() else {
        return None;
    };
    Some(CommandTool {
        name: "Read",
        input: json!({"file_path": file, "command": command, "description": format!("Read {file}")}),
    })
}

/// `sed -n 'A,Bp' file` (or `Ap`) only prints lines: a read of that range.
fn sed_read(command: &str, args: &[&str]) -> Option<CommandTool> {
    let [flag, range, file] = args else {
        return None;
    };
    if *flag != "-n" {
        return None;
    }
    let range = range.strip_suffix('p')?;
    let (start, end) = match range.split_once(',') {
        Some((a, b)) => (a.parse::<u64>().ok()?, b.parse::<u64>().ok()?),
        None => {
            let line = range.parse::<u64>().ok()?;
            (line, line)
        }
    };
    if end < start {
        return None;
    }
    Some(CommandTool {
        name: "Read",
        input: json!({
            "file_path": file,
            "offset": start,
            "limit": end - start + 1,
            "command": command,
            "description": format!("Read lines {start}-{end} of {file}"),
        }),
    })
}

fn list(command: &str, path: Option<&str>, pattern: Option<&str>) -> Option<CommandTool> {
    let path = path.unwrap_or(".");
    let mut input =
        json!({"path": path, "command": command, "description": format!("List {path}")});
    if let Some(pattern) = pattern {
        input["pattern"] = json!(pattern);
        input["description"] = json!(format!("Find {pattern} in {path}"));
    }
    Some(CommandTool {
        name: "Glob",
        input,
    })
}

/// `find [path] [-name|-iname|-path PATTERN] …`; an action that changes files is not a listing.
fn find(command: &str, args: &[&str]) -> Option<CommandTool> {
    if args
        .iter()
        .any(|a| matches!(*a, "-delete" | "-exec" | "-execdir" | "-ok" | "-okdir"))
    {
        return None;
    }
    let path = args.first().filter(|a| !a.starts_with('-')).copied();
    let pattern = args
        .windows(2)
        .find(|w| matches!(w[0], "-name" | "-iname" | "-path"))
        .map(|w| w[1]);
    list(command, path, pattern)
}

fn search(command: &str, args: &[&str]) -> Option<CommandTool> {
    let explicit = args
        .windows(2)
        .find(|w| matches!(w[0], "-e" | "--regexp"))
        .map(|w| w[1]);
    let ops = operands(
        args,
        &[
            "-e",
            "--regexp",
            "-g",
            "--glob",
            "-t",
            "--type",
            "-A",
            "-B",
            "-C",
            "-m",
            "--max-count",
            "-f",
            "--include",
            "--exclude",
        ],
    );
    let (pattern, paths) = match explicit {
        Some(p) => (p, &ops[..]),
        None => (*ops.first()?, &ops[1.min(ops.len())..]),
    };
    let mut input = json!({"pattern": pattern, "command": command});
    let description = match paths.first() {
        Some(path) => {
            input["path"] = json!(path);
            format!("Search for {pattern} in {path}")
        }
        None => format!("Search for {pattern}"),
    };
    input["description"] = json!(description);
    Some(CommandTool {
        name: "Grep",
        input,
    })
}

/// A short description of any other command: the command itself when short, else its program.
fn describe_bash(command: &str) -> String {
    let first_line = command.lines().next().unwrap_or_default();
    if first_line.chars().count() <= 60 && !command.contains('\n') {
        first_line.to_string()
    } else {
        let program = first_line.split_whitespace().next().unwrap_or("command");
        format!("Run {}", program_name(program))
    }
}

/// POSIX-ish word splitting: single quotes, double quotes (with `\"`, `\\`, `\$`, `` \` ``
/// escapes) and backslash escapes. `None` on an unterminated quote.
fn split(text: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => current.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => match chars.next()? {
                            c @ ('"' | '\\' | '$' | '`') => current.push(c),
                            '\n' => {}
                            c => {
                                current.push('\\');
                                current.push(c);
                            }
                        },
                        c => current.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(c) = chars.next() {
                    current.push(c);
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                current.push(c);
            }
        }
    }
    if in_word {
        words.push(current);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_listings_and_searches_get_their_cards() {
        let cases = [
            ("cat README.md", "Read", "file_path", "README.md"),
            ("head -n 20 src/main.rs", "Read", "file_path", "src/main.rs"),
            ("cd /w && cat a.txt", "Read", "file_path", "a.txt"),
            ("ls", "Glob", "path", "."),
            ("find src -name '*.rs'", "Glob", "pattern", "*.rs"),
            ("rg -n 'fn main' src", "Grep", "path", "src"),
            ("grep -rn -e foo .", "Grep", "pattern", "foo"),
            ("git grep needle", "Grep", "pattern", "needle"),
        ];
        for (command, name, key, value) in cases {
            let tool = classify(command);
            assert_eq!(tool.name, name, "{command}");
            assert_eq!(tool.input[key], value, "{command}: {}", tool.input);
            assert_eq!(tool.input["command"], command);
            assert!(tool.input["description"].is_string());
        }
    }

    #[test]
    fn writes_chains_and_other_commands_stay_bash() {
        for command in [
            "echo hello > mock_written.txt && cat mock_written.txt",
            "cat a b",
            "find . -name x -delete",
            "sed -i 's/a/b/' f",
            "rg x | xargs rm",
            "cargo test",
            "cat < x",
        ] {
            let tool = classify(command);
            assert_eq!(tool.name, "Bash", "{command}");
            assert_eq!(tool.input["command"], command);
        }
    }

    #[test]
    fn wrappers_and_non_wrappers() {
        assert_eq!(
            display_command(
                "/bin/bash -lc 'echo hello > mock_written.txt && cat mock_written.txt'"
            ),
            "echo hello > mock_written.txt && cat mock_written.txt"
        );
        assert_eq!(
            display_command(r#"/bin/zsh -c "say \"hi\"""#),
            r#"say "hi""#
        );
        assert_eq!(
            display_command("/usr/bin/python3 -c 'x'"),
            "/usr/bin/python3 -c 'x'"
        );
        assert_eq!(
            display_command("bash -lc 'unterminated"),
            "bash -lc 'unterminated"
        );
        assert_eq!(display_command("bash -lc a b"), "bash -lc a b");
        assert_eq!(display_command(""), "");
    }
}
