//! Launching a pi-family CLI for one turn: argv, environment, attachments, stdin.
//!
//! pi and oh-my-pi share their event stream and most of their command line; what differs is
//! data in a [`Flavor`] (flag spelling, thinking levels, permission mapping, a runtime the
//! launcher needs). [`build_turn`] turns a [`Request`] into the
//! [`ProcessTurn`](bridge_core::turn::ProcessTurn):
//!
//! ```text
//! <cli> --print --mode json [--model <m>] [<resume flag> <id>] [--thinking <level>]
//!       [<permission flags>] [--append-system-prompt <file>] [@<attachment>…]
//! ```
//!
//! * the prompt is written to stdin, which is closed right after it: both CLIs read piped
//!   stdin to EOF and use it as the message. It never goes into argv, so a prompt starting
//!   with `-` or `@` stays text and `ps` does not show it;
//! * `agentPrompt` is written to a file passed to `--append-system-prompt` (given as text, the
//!   CLIs would read it as a path whenever it happens to name an existing file);
//! * image (and text) attachments are written to a private temporary directory (0700, files
//!   0600, removed after the turn) and passed as `@<path>`, the CLIs' own way to attach files;
//!   `{type:"local_image", path}` attachments are passed as they are;
//! * `baseUrl` / `apiKey` are not used: pi and omp take endpoints and keys from their own
//!   config (`~/.pi/agent/models.json`, `~/.omp/agent/models.yml`) or provider variables such
//!   as `OPENAI_API_KEY`, which the child inherits; passing a key with `--api-key` would put it
//!   in the process list. A warning says so.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use bridge_core::attachment::write_private;
use bridge_core::event::{ErrorCode, Event};
use bridge_core::process::CommandSpec;
use bridge_core::request::{Attachment, Request};
use bridge_one_shot::{
    BuildError, OneShotTurn, endpoint_fields, set_env_defaults, stdin_prompt_turn,
};
use permission_mapper::RequestedMode;

use crate::normalize::PiNormalizer;
use sdk_probe::{ProbeEnv, ProbeSpec};

/// How a flag takes its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueStyle {
    /// `--flag value` (pi's parser only knows this form).
    Separate,
    /// `--flag=value` (omp's parser; needed for flags whose value is optional, like
    /// `--resume`).
    Joined,
}

/// The permission flags for a requested mode, and what to tell the user about them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Permissions {
    /// Arguments to add (already in the CLI's spelling).
    pub args: Vec<String>,
    /// Sentences for `permission_mode` warnings (why the mode is not honoured exactly).
    pub notes: Vec<String>,
}

/// A program the CLI's launcher needs on PATH (omp's `#!/usr/bin/env bun`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Runtime {
    /// Executable name (`bun`).
    pub binary: &'static str,
    /// Where it is usually installed when not on PATH, relative to HOME (`.bun/bin`).
    pub install_dirs: &'static [&'static str],
    /// How to install it.
    pub install_hint: &'static str,
}

/// Everything that differs between the pi-family CLIs.
#[derive(Debug, Clone, Copy)]
pub struct Flavor {
    /// Where the CLI is and which versions are tested.
    pub probe: ProbeSpec,
    /// The flag that resumes a session by id (`--session` for pi, `--resume` for omp).
    pub resume_flag: &'static str,
    /// How every value flag is written.
    pub values: ValueStyle,
    /// The values `--thinking` accepts, lowest to highest.
    pub thinking_levels: &'static [&'static str],
    /// Model names that mean "the CLI's configured default" for this provider, besides the
    /// shared ones (`auto`, `default`, …), compared case-insensitively.
    pub default_model_tokens: &'static [&'static str],
    /// Variables set on the child unless the user's environment already has them.
    pub env_defaults: &'static [(&'static str, &'static str)],
    /// The permission mapping (a `permission-mapper` module).
    pub permissions: fn(&RequestedMode) -> Permissions,
    /// A program the launcher needs on PATH.
    pub runtime: Option<Runtime>,
}

fn push_value(
    command: &mut CommandSpec,
    style: ValueStyle,
    flag: &str,
    value: impl Into<OsString>,
) {
    match style {
        ValueStyle::Separate => {
            command.arg(flag).arg(value);
        }
        ValueStyle::Joined => {
            let mut joined = OsString::from(format!("{flag}="));
            joined.push(value.into());
            command.arg(joined);
        }
    }
}

/// The `--thinking` level for a request, with a warning when the request could not be honoured
/// exactly: `disableThinking` is `off`; a `reasoningEffort` the CLI knows is passed as it is;
/// `max` on a CLI whose highest level is `xhigh` becomes `xhigh`; anything else is ignored.
///
/// ```
/// use bridge_pi_family::launch::thinking_level;
/// let pi = ["off", "minimal", "low", "medium", "high", "xhigh"];
/// assert_eq!(thinking_level(&pi, Some("high"), false), (Some("high"), None));
/// assert_eq!(thinking_level(&pi, Some("max"), false).0, Some("xhigh"));
/// assert_eq!(thinking_level(&pi, Some("high"), true), (Some("off"), None));
/// assert_eq!(thinking_level(&pi, Some("turbo"), false).0, None);
/// ```
pub fn thinking_level<'a>(
    levels: &[&'a str],
    effort: Option<&str>,
    disable_thinking: bool,
) -> (Option<&'a str>, Option<String>) {
    if disable_thinking {
        return (levels.iter().copied().find(|l| *l == "off"), None);
    }
    let Some(effort) = effort.map(str::trim).filter(|e| !e.is_empty()) else {
        return (None, None);
    };
    let wanted = effort.to_ascii_lowercase();
    if let Some(level) = levels.iter().copied().find(|l| *l == wanted) {
        return (Some(level), None);
    }
    if wanted == "max"
        && let Some(highest) = levels.last().copied()
    {
        return (
            Some(highest),
            Some(format!(
                "reasoningEffort `max` is above this CLI's highest thinking level; used `{highest}`"
            )),
        );
    }
    (
        None,
        Some(format!(
            "reasoningEffort `{effort}` is not one of {levels:?}; the CLI's default thinking level applies"
        )),
    )
}

/// File extension for a media type (`image/png` → `png`).
fn extension(media_type: &str) -> &'static str {
    match media_type {
        "image/png" => "png",
        "image/jpeg" | "image/jpg" => "jpg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        "image/svg+xml" => "svg",
        "application/json" => "json",
        "text/markdown" => "md",
        "text/csv" => "csv",
        "text/html" => "html",
        _ if media_type.starts_with("text/") => "txt",
        _ => "bin",
    }
}

/// Whether pi / omp can take an attachment of `media_type` with `@path`: images go to the model
/// as images, text files are inlined; anything else would be read as (garbled) text.
fn attachable(media_type: &str) -> bool {
    media_type.starts_with("image/")
        || media_type.starts_with("text/")
        || matches!(
            media_type,
            "application/json" | "application/xml" | "application/yaml" | "application/x-yaml"
        )
}

/// A safe file name for an attachment: the client's name reduced to `[A-Za-z0-9._-]`, or
/// `attachment-<n>.<ext>`.
fn file_name(index: usize, name: Option<&str>, media_type: &str) -> String {
    let cleaned: String = name
        .unwrap_or("")
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or("")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let cleaned = cleaned.trim_start_matches(['.', '-']);
    if cleaned.is_empty() {
        format!("attachment-{}.{}", index + 1, extension(media_type))
    } else {
        // The index keeps two attachments with the same name apart.
        format!("{}-{cleaned}", index + 1)
    }
}

/// The turn's private directory, created on first use ([`bridge_one_shot::scratch_dir`]).
fn scratch_dir(scratch: &mut Option<tempfile::TempDir>, id: &str) -> Result<PathBuf, BuildError> {
    if scratch.is_none() {
        *scratch = Some(bridge_one_shot::scratch_dir(id)?);
    }
    Ok(scratch
        .as_ref()
        .map(|d| d.path().to_path_buf())
        .unwrap_or_default())
}

/// Where `runtime` is: `Ok(None)` when it is on PATH, `Ok(Some(dir))` for a directory to put in
/// front of the child's PATH (an install dir, or the directory the CLI itself was found in, as
/// after `npm i -g bun <cli>`), `Err` when it is nowhere.
pub fn find_runtime(
    runtime: &Runtime,
    cli: &Path,
    env: &ProbeEnv,
) -> Result<Option<PathBuf>, String> {
    let cwd = env.cwd().to_path_buf();
    if let Some(path) = env.path()
        && which::which_in(runtime.binary, Some(path), &cwd).is_ok()
    {
        return Ok(None);
    }
    let mut candidates: Vec<PathBuf> = Vec::new();
    if let Some(dir) = cli.parent() {
        candidates.push(dir.to_path_buf());
    }
    if let Some(home) = env.home() {
        candidates.extend(runtime.install_dirs.iter().map(|d| home.join(d)));
    }
    for dir in candidates {
        let exe = dir.join(runtime.binary);
        if exe.is_file() {
            return Ok(Some(dir));
        }
    }
    Err(format!(
        "`{}` needs `{}` on PATH and it was not found (PATH, {}); install it with `{}`",
        cli.display(),
        runtime.binary,
        runtime.install_dirs.join(", "),
        runtime.install_hint
    ))
}

/// Makes `runtime` reachable for `command` (the CLI at `program`): nothing when it is on PATH,
/// its directory in front of the child's PATH when it is elsewhere ([`find_runtime`]), `Err`
/// saying how to install it when it is nowhere.
pub fn provide_runtime(
    runtime: &Runtime,
    program: &Path,
    env: &ProbeEnv,
    command: &mut CommandSpec,
) -> Result<(), String> {
    if let Some(dir) = find_runtime(runtime, program, env)? {
        let mut path = OsString::from(dir);
        if let Some(inherited) = env.path().filter(|p| !p.is_empty()) {
            path.push(":");
            path.push(inherited);
        }
        command.env("PATH", path);
    }
    Ok(())
}

/// Builds the process for one turn of `flavor`'s CLI at `program`.
pub fn build_turn(
    flavor: &Flavor,
    program: PathBuf,
    request: &Request,
    env: &ProbeEnv,
) -> Result<OneShotTurn, BuildError> {
    let mut warnings = Vec::new();
    let mut scratch = None;
    let mut command = CommandSpec::new(program.clone());
    for arg in ["--print", "--mode", "json"] {
        command.arg(arg);
    }
    let model = request.model.as_deref().map(str::trim).filter(|m| {
        !m.is_empty()
            && !flavor
                .default_model_tokens
                .iter()
                .any(|t| t.eq_ignore_ascii_case(m))
    });
    if let Some(model) = model {
        push_value(&mut command, flavor.values, "--model", model);
    }
    if let Some(id) = &request.session_id {
        push_value(&mut command, flavor.values, flavor.resume_flag, id);
    }
    let (level, note) = thinking_level(
        flavor.thinking_levels,
        request.reasoning_effort.as_deref(),
        request.disable_thinking,
    );
    if let Some(level) = level {
        push_value(&mut command, flavor.values, "--thinking", level);
    }
    if let Some(note) = note {
        warnings.push(Event::warning("reasoning_effort", note));
    }
    let requested = RequestedMode::from_option(request.permission_mode.as_deref());
    let permissions = (flavor.permissions)(&requested);
    for arg in permissions.args {
        command.arg(arg);
    }
    for note in permissions.notes {
        warnings.push(Event::warning("permission_mode", note));
    }
    for field in endpoint_fields(request) {
        warnings.push(Event::warning(
            "unsupported_field",
            format!(
                "{} takes endpoints and keys from its own model config or provider variables \
                 (such as OPENAI_API_KEY); the request's `{field}` is not used",
                flavor.probe.display_name
            ),
        ));
    }
    if let Some(prompt) = request.instructions() {
        let dir = scratch_dir(&mut scratch, flavor.probe.id)?;
        let path = dir.join("agent-prompt.md");
        write_private(&path, prompt.as_bytes())
            .map_err(|e| BuildError::invalid(format!("cannot write the agent prompt: {e}")))?;
        push_value(&mut command, flavor.values, "--append-system-prompt", &path);
    }
    let mut files = Vec::new();
    for (index, attachment) in request.attachments.iter().enumerate() {
        match attachment {
            Attachment::Inline {
                file_name: name,
                media_type,
                ..
            } => {
                let shown = name
                    .clone()
                    .unwrap_or_else(|| format!("attachment {}", index + 1));
                if !attachable(media_type) {
                    warnings.push(Event::warning(
                        "attachment_skipped",
                        format!(
                            "{shown} ({media_type}) was not attached: {} takes images and text files",
                            flavor.probe.display_name
                        ),
                    ));
                    continue;
                }
                let bytes = attachment
                    .to_bytes(index)
                    .map_err(|e| BuildError::invalid(e.to_string()))?;
                let dir = scratch_dir(&mut scratch, flavor.probe.id)?;
                let path = dir.join(file_name(index, name.as_deref(), media_type));
                write_private(&path, &bytes).map_err(|e| {
                    BuildError::invalid(format!("cannot write attachment {shown}: {e}"))
                })?;
                files.push(path);
            }
            Attachment::LocalImage { path } => {
                let resolved = match (&request.cwd, path.is_relative()) {
                    (Some(cwd), true) => cwd.join(path),
                    _ => path.clone(),
                };
                if !resolved.is_file() {
                    return Err(BuildError::invalid(format!(
                        "attachment {} does not exist",
                        path.display()
                    )));
                }
                files.push(resolved);
            }
        }
    }
    for file in files {
        let mut arg = OsString::from("@");
        arg.push(file);
        command.arg(arg);
    }
    set_env_defaults(&mut command, flavor.env_defaults, env);
    if let Some(runtime) = &flavor.runtime {
        provide_runtime(runtime, &program, env, &mut command).map_err(|message| BuildError {
            code: ErrorCode::CliNotFound,
            message,
        })?;
    }
    command.cwd = request.cwd.clone();
    Ok(OneShotTurn {
        turn: stdin_prompt_turn(flavor.probe.id, command, request.message.clone()),
        normalizer: Box::new(PiNormalizer::new(flavor.probe.id)),
        warnings,
        scratch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_safe_and_distinct() {
        assert_eq!(
            file_name(0, Some("../../etc/passwd"), "text/plain"),
            "1-passwd"
        );
        assert_eq!(
            file_name(1, Some("shot 1.png"), "image/png"),
            "2-shot_1.png"
        );
        assert_eq!(file_name(2, None, "image/jpeg"), "attachment-3.jpg");
        assert_eq!(file_name(3, Some("..."), "image/webp"), "attachment-4.webp");
        assert_eq!(file_name(4, Some("-rf"), "text/plain"), "5-rf");
    }

    #[test]
    fn only_images_and_text_are_attached() {
        for (media, ok) in [
            ("image/png", true),
            ("text/x-rust", true),
            ("application/json", true),
            ("application/pdf", false),
            ("application/octet-stream", false),
        ] {
            assert_eq!(attachable(media), ok, "{media}");
        }
    }
}
