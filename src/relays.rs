//! User-defined relay providers: `$XDG_CONFIG_HOME/bridge/providers.toml` (else
//! `~/.config/bridge/providers.toml`).
//!
//! Each `[providers.<id>]` table declares one more Anthropic-compatible relay that Claude Code
//! is pointed at (a [`ClaudeRelay`], the same kind as the built-in `minimax` and `zcode`):
//!
//! ```toml
//! [providers.deepseek]
//! display_name = "DeepSeek (Claude Code)"   # optional, default: the id
//! base_url = "https://api.deepseek.com/anthropic"
//! key_env = "DEEPSEEK_API_KEY"              # the variable the key is read from
//! deltas = "auto"                           # incremental | cumulative | auto (default)
//! models = { main = "deepseek-chat", small_fast = "deepseek-chat" }
//!                                           # main, opus, sonnet, haiku, small_fast
//! ```
//!
//! An invalid file is an error naming the file, the line and the field
//! ([`ProvidersConfigError`]); an id that is already a built-in provider is refused. Parsed
//! profiles live as long as the process (their strings are leaked once, like the `'static`
//! data of a built-in provider).

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bridge_channel_claude::deltas::DeltaMode;
use bridge_channel_claude::relay::{ClaudeRelay, RelayModels};
use serde::Deserialize;
use toml::Spanned;

/// Why `providers.toml` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ProvidersConfigError {
    /// The file exists but cannot be read.
    #[error("{}: cannot read the providers file: {source}", file.display())]
    Read {
        /// The file.
        file: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The file is not a valid providers declaration.
    #[error("{}:{line}:{column}: `{field}`: {message}", file.display())]
    Invalid {
        /// The file.
        file: PathBuf,
        /// 1-based line of the problem.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The field, as a dotted path (`providers.deepseek.base_url`).
        field: String,
        /// What is wrong and what is expected.
        message: String,
    },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    providers: std::collections::BTreeMap<Spanned<String>, Spanned<Entry>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    display_name: Option<String>,
    base_url: Spanned<String>,
    key_env: Spanned<String>,
    deltas: Option<Spanned<String>>,
    #[serde(default)]
    models: Models,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Models {
    main: Option<String>,
    opus: Option<String>,
    sonnet: Option<String>,
    haiku: Option<String>,
    small_fast: Option<String>,
}

/// Where the providers file is: `$XDG_CONFIG_HOME/bridge/providers.toml`, else
/// `$HOME/.config/bridge/providers.toml` (`None` without either variable).
pub fn config_path(xdg_config_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    let base = match (xdg_config_home.filter(|d| !d.is_empty()), home) {
        (Some(dir), _) => PathBuf::from(dir),
        (None, Some(home)) if !home.is_empty() => Path::new(home).join(".config"),
        _ => return None,
    };
    Some(base.join("bridge").join("providers.toml"))
}

/// 1-based line and column of byte `offset` in `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The dotted key path of the value or key at `offset`: the table header above it plus the
/// key on its line (a best effort for the parser's own errors, which carry only a span).
fn field_at(text: &str, offset: usize) -> String {
    let before = &text[..offset.min(text.len())];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = text[line_start..].lines().next().unwrap_or("");
    let header = before[..line_start]
        .lines()
        .rev()
        .chain(std::iter::once(line).filter(|l| l.trim_start().starts_with('[')))
        .find_map(|l| {
            let l = l.trim();
            l.strip_prefix('[')
                .and_then(|h| h.split(']').next())
                .map(|h| h.trim_matches('[').trim().to_string())
        });
    let key = line
        .split_once('=')
        .map(|(k, _)| k.trim().to_string())
        .filter(|k| !k.is_empty() && !line.trim_start().starts_with('['));
    match (header, key) {
        (Some(h), Some(k)) => format!("{h}.{k}"),
        (Some(h), None) => h,
        (None, Some(k)) => k,
        (None, None) => "(document)".into(),
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn valid_id(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_uppercase() || c == '_')
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// Parses a providers file's `text` (`file` only names it in errors). `taken` are the ids
/// that already exist (the built-in providers and commands): declaring one is an error.
pub fn parse(
    text: &str,
    file: &Path,
    taken: &[&str],
) -> Result<Vec<ClaudeRelay>, ProvidersConfigError> {
    let invalid = |span: Range<usize>, field: String, message: String| {
        let (line, column) = line_column(text, span.start);
        ProvidersConfigError::Invalid {
            file: file.to_path_buf(),
            line,
            column,
            field,
            message,
        }
    };
    let parsed: File = toml::from_str(text).map_err(|error| {
        let span = error.span().unwrap_or(0..0);
        let field = field_at(text, span.start);
        invalid(span, field, error.message().trim().to_string())
    })?;
    let mut relays = Vec::new();
    for (id, entry) in parsed.providers {
        let (id_span, id) = (id.span(), id.into_inner());
        let entry = entry.into_inner();
        let field = |name: &str| format!("providers.{id}.{name}");
        if !valid_id(&id) {
            return Err(invalid(
                id_span,
                format!("providers.{id}"),
                "a provider id is lower-case letters, digits, `-` and `_`".into(),
            ));
        }
        if taken.contains(&id.as_str()) {
            return Err(invalid(
                id_span,
                format!("providers.{id}"),
                format!("`{id}` is a built-in provider; choose another id"),
            ));
        }
        let base_url = entry.base_url.get_ref();
        if !(base_url.starts_with("https://") || base_url.starts_with("http://")) {
            return Err(invalid(
                entry.base_url.span(),
                field("base_url"),
                format!("`{base_url}` is not an http:// or https:// URL"),
            ));
        }
        let key_env = entry.key_env.get_ref();
        if !valid_env_name(key_env) {
            return Err(invalid(
                entry.key_env.span(),
                field("key_env"),
                format!("`{key_env}` is not an environment variable name (A-Z, 0-9, _)"),
            ));
        }
        let deltas = match &entry.deltas {
            None => DeltaMode::Auto,
            Some(name) => DeltaMode::from_name(name.get_ref()).ok_or_else(|| {
                invalid(
                    name.span(),
                    field("deltas"),
                    format!(
                        "`{}` is not one of incremental, cumulative, auto",
                        name.get_ref()
                    ),
                )
            })?,
        };
        let id = leak(id);
        let display_name = leak(entry.display_name.unwrap_or_else(|| id.to_string()));
        let mut relay = ClaudeRelay::new(
            id,
            display_name,
            leak(entry.base_url.into_inner()),
            leak(entry.key_env.into_inner()),
        );
        let m = entry.models;
        relay.models = RelayModels {
            main: m.main.map(leak),
            opus: m.opus.map(leak),
            sonnet: m.sonnet.map(leak),
            haiku: m.haiku.map(leak),
            small_fast: m.small_fast.map(leak),
        };
        relay.deltas = deltas;
        relays.push(relay);
    }
    Ok(relays)
}

/// Reads the providers file at `file`; a missing file declares nothing.
pub fn load(file: &Path, taken: &[&str]) -> Result<Vec<ClaudeRelay>, ProvidersConfigError> {
    match std::fs::read_to_string(file) {
        Ok(text) => parse(&text, file, taken),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(ProvidersConfigError::Read {
            file: file.to_path_buf(),
            source,
        }),
    }
}

/// This process's user-defined relays, read once from [`config_path`] of its environment.
pub fn user_relays() -> &'static Result<Vec<&'static ClaudeRelay>, ProvidersConfigError> {
    static RELAYS: OnceLock<Result<Vec<&'static ClaudeRelay>, ProvidersConfigError>> =
        OnceLock::new();
    RELAYS.get_or_init(|| {
        let xdg = std::env::var("XDG_CONFIG_HOME").ok();
        let home = std::env::var("HOME").ok();
        let Some(file) = config_path(xdg.as_deref(), home.as_deref()) else {
            return Ok(Vec::new());
        };
        let taken = crate::built_in_ids();
        let relays = load(&file, &taken)?;
        Ok(relays
            .into_iter()
            .map(|r| &*Box::leak(Box::new(r)))
            .collect())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const TAKEN: &[&str] = &["claude", "minimax", "system"];

    fn parse_str(text: &str) -> Result<Vec<ClaudeRelay>, ProvidersConfigError> {
        parse(text, Path::new("/cfg/providers.toml"), TAKEN)
    }

    fn error_of(text: &str) -> String {
        parse_str(text).unwrap_err().to_string()
    }

    #[test]
    fn a_relay_is_declared_with_its_models_and_delta_mode() {
        let relays = parse_str(
            "[providers.deepseek]\ndisplay_name = \"DeepSeek\"\nbase_url = \"https://api.deepseek.com/anthropic\"\nkey_env = \"DEEPSEEK_API_KEY\"\ndeltas = \"incremental\"\nmodels = { main = \"deepseek-chat\", haiku = \"deepseek-lite\" }\n\n[providers.inhouse]\nbase_url = \"http://10.0.0.1/anthropic\"\nkey_env = \"INHOUSE_TOKEN\"\n",
        )
        .unwrap();
        assert_eq!(relays.len(), 2);
        let d = &relays[0];
        assert_eq!(
            (d.id, d.display_name, d.base_url, d.key_env()),
            (
                "deepseek",
                "DeepSeek",
                "https://api.deepseek.com/anthropic",
                "DEEPSEEK_API_KEY"
            )
        );
        assert_eq!(d.deltas, DeltaMode::Incremental);
        assert_eq!(
            d.models.env().collect::<Vec<_>>(),
            [
                ("ANTHROPIC_MODEL", "deepseek-chat"),
                ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "deepseek-lite")
            ]
        );
        assert_eq!(
            (relays[1].display_name, relays[1].deltas),
            ("inhouse", DeltaMode::Auto)
        );
        assert!(parse_str("").unwrap().is_empty());
    }

    #[test]
    fn errors_name_the_file_line_and_field() {
        assert_eq!(
            error_of(
                "[providers.x]\nbase_url = \"https://a\"\nkey_env = \"K\"\ndeltas = \"snapshots\"\n"
            ),
            "/cfg/providers.toml:4:10: `providers.x.deltas`: `snapshots` is not one of incremental, cumulative, auto"
        );
        assert_eq!(
            error_of("[providers.x]\nbase_url = \"ftp://a\"\nkey_env = \"K\"\n"),
            "/cfg/providers.toml:2:12: `providers.x.base_url`: `ftp://a` is not an http:// or https:// URL"
        );
        let unknown =
            error_of("[providers.x]\nbase_url = \"https://a\"\nkey_env = \"K\"\nmodel = \"m\"\n");
        assert!(
            unknown
                .starts_with("/cfg/providers.toml:4:1: `providers.x.model`: unknown field `model`"),
            "{unknown}"
        );
        let missing = error_of("[providers.x]\nbase_url = \"https://a\"\n");
        assert!(
            missing.starts_with("/cfg/providers.toml:1:") && missing.contains("key_env"),
            "{missing}"
        );
        let wrong_type = error_of("[providers.x]\nbase_url = 3\nkey_env = \"K\"\n");
        assert!(
            wrong_type.starts_with("/cfg/providers.toml:2:12: `providers.x.base_url`:"),
            "{wrong_type}"
        );
        let syntax = error_of("[providers.x\n");
        assert!(syntax.starts_with("/cfg/providers.toml:1:"), "{syntax}");
        assert!(
            error_of("[providers.y]\nbase_url = \"https://a\"\nkey_env = \"lower\"\n")
                .contains("`providers.y.key_env`")
        );
    }

    #[test]
    fn a_built_in_id_is_refused() {
        assert_eq!(
            error_of("[providers.minimax]\nbase_url = \"https://a\"\nkey_env = \"K\"\n"),
            "/cfg/providers.toml:1:12: `providers.minimax`: `minimax` is a built-in provider; choose another id"
        );
        assert!(
            error_of("[providers.Bad]\nbase_url = \"https://a\"\nkey_env = \"K\"\n")
                .contains("lower-case")
        );
    }

    #[test]
    fn the_file_is_under_xdg_config_home_else_home() {
        assert_eq!(
            config_path(Some("/x"), Some("/h")),
            Some(PathBuf::from("/x/bridge/providers.toml"))
        );
        assert_eq!(
            config_path(Some(""), Some("/h")),
            Some(PathBuf::from("/h/.config/bridge/providers.toml"))
        );
        assert_eq!(config_path(None, None), None);
        let missing = load(Path::new("/nonexistent/providers.toml"), TAKEN).unwrap();
        assert!(missing.is_empty());
    }
}
