//! Codex reports commands as the shell invocation it ran (`/bin/bash -lc 'echo hello'`); users
//! want to see `echo hello`. [`display_command`] unwraps the usual login-shell wrapper and leaves
//! anything else as it is.

/// Shells whose `-c` / `-lc` wrapper is unwrapped.
const SHELLS: &[&str] = &["bash", "sh", "zsh", "dash", "fish"];

/// The command the user would recognise: the script of `<shell> -lc <script>` (or `-c`), with
/// POSIX quoting undone; the input unchanged when it is not such a wrapper.
///
/// ```
/// use bridge_channel_codex::command::display_command;
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
