//! Keeps secrets out of everything the bridge prints.
//!
//! The request's `apiKey` and the values of credential-like environment variables are collected
//! once; every output line passes through [`Redactor::redact`] before it is written, so a CLI
//! that echoes its key in an error message cannot leak it through the bridge.

use std::borrow::Cow;

use crate::event::Event;

/// Shortest value treated as a secret (shorter values would match ordinary text).
const MIN_SECRET_LEN: usize = 8;

/// Replaces known secret values with `[redacted]`.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

/// Whether an environment variable name looks like it holds a credential.
pub fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    ["API_KEY", "APIKEY", "TOKEN", "SECRET", "PASSWORD", "AUTH"]
        .iter()
        .any(|needle| upper.contains(needle))
}

impl Redactor {
    /// An empty redactor.
    pub fn new() -> Self {
        Redactor::default()
    }

    /// Adds a secret value (ignored when too short to be one).
    pub fn add(&mut self, secret: &str) {
        let secret = secret.trim();
        if secret.len() >= MIN_SECRET_LEN && !self.secrets.iter().any(|s| s == secret) {
            self.secrets.push(secret.to_string());
        }
    }

    /// Adds the values of credential-like variables from `vars`.
    pub fn add_env<I, K, V>(&mut self, vars: I)
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        for (key, value) in vars {
            if is_secret_env_name(key.as_ref()) {
                self.add(value.as_ref());
            }
        }
    }

    /// The text with every known secret replaced.
    ///
    /// ```
    /// let mut r = bridge_core::redact::Redactor::new();
    /// r.add("sk-canary-123456");
    /// assert_eq!(r.redact("key sk-canary-123456 bad"), "key [redacted] bad");
    /// ```
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if memchr::memmem::find(out.as_bytes(), secret.as_bytes()).is_some() {
                out = Cow::Owned(out.replace(secret.as_str(), "[redacted]"));
            }
        }
        out
    }

    /// Whether there is any secret to redact.
    pub fn is_empty(&self) -> bool {
        self.secrets.is_empty()
    }

    /// Length in bytes of the longest end of `text` that is the start of a secret (and not a
    /// whole one): what a stream must hold back until it knows whether the secret follows.
    /// Always a `char` boundary of `text` (a secret's first byte starts a `char`).
    ///
    /// ```
    /// let mut r = bridge_core::redact::Redactor::new();
    /// r.add("sk-canary-123456");
    /// assert_eq!(r.partial_secret_suffix("the key is sk-can"), 6);
    /// assert_eq!(r.partial_secret_suffix("the key is sk-canary-123456"), 0);
    /// assert_eq!(r.partial_secret_suffix("nothing here"), 0);
    /// ```
    pub fn partial_secret_suffix(&self, text: &str) -> usize {
        let bytes = text.as_bytes();
        let mut longest = 0;
        for secret in &self.secrets {
            let secret = secret.as_bytes();
            let window = (secret.len() - 1).min(bytes.len());
            let tail = &bytes[bytes.len() - window..];
            // Candidates start where the secret's first byte occurs; the first hit is the
            // longest one.
            for start in memchr::memchr_iter(secret[0], tail) {
                let len = tail.len() - start;
                if len <= longest {
                    break;
                }
                if tail[start..] == secret[..len] {
                    longest = len;
                    break;
                }
            }
        }
        longest
    }
}

/// Keeps a secret that arrives split across streamed deltas out of the output.
///
/// Each output line is redacted on its own, so a key the model streams as `"sk-an"`, `"t-…"`
/// would pass line by line. The guard sits in front of the encoder: it redacts each delta
/// together with the text it held back, and holds back the end of a delta that could be the
/// start of a secret until the next delta of the same kind (answer or thinking) shows whether it
/// is. Any other event releases what is held first, so nothing is lost and text never moves past
/// a tool call or the turn's end; with no secrets it passes events through.
///
/// ```
/// use bridge_core::event::Event;
/// use bridge_core::redact::{Redactor, SplitSecretGuard};
///
/// let mut redactor = Redactor::new();
/// redactor.add("sk-canary-123456");
/// let mut guard = SplitSecretGuard::default();
/// let mut out = Vec::new();
/// for piece in ["key: sk-can", "ary-12", "3456!"] {
///     guard.pass(Event::TextDelta { text: piece.into() }, &redactor, &mut out);
/// }
/// guard.pass(Event::BlockReset, &redactor, &mut out);
/// let text: String = out
///     .iter()
///     .filter_map(|e| match e {
///         Event::TextDelta { text } => Some(text.as_str()),
///         _ => None,
///     })
///     .collect();
/// assert_eq!(text, "key: [redacted]!");
/// ```
#[derive(Debug, Default)]
pub struct SplitSecretGuard {
    /// Held-back text of the answer (`[0]`) and of the thinking (`[1]`): each is its own
    /// stream, so a thinking delta between two text pieces does not release a partial key.
    held: [Option<String>; 2],
}

impl SplitSecretGuard {
    /// Appends to `out` the events to write in place of `event`, in order.
    pub fn pass(&mut self, event: Event, redactor: &Redactor, out: &mut Vec<Event>) {
        if redactor.is_empty() {
            out.push(event);
            return;
        }
        match event {
            Event::TextDelta { text } => self.delta(false, text, redactor, out),
            Event::ThinkingDelta { text } => self.delta(true, text, redactor, out),
            other => {
                self.release(out);
                out.push(other);
            }
        }
    }

    /// Appends what is held back (if anything) to `out`.
    pub fn release(&mut self, out: &mut Vec<Event>) {
        for (held, thinking) in self.held.iter_mut().zip([false, true]) {
            if let Some(text) = held.take() {
                out.push(delta(thinking, text));
            }
        }
    }

    fn delta(&mut self, thinking: bool, text: String, redactor: &Redactor, out: &mut Vec<Event>) {
        let held = &mut self.held[usize::from(thinking)];
        let combined = match held.take() {
            Some(mut earlier) => {
                earlier.push_str(&text);
                earlier
            }
            None => text,
        };
        // Most deltas hold no secret: keep their string instead of copying it.
        let redacted = match redactor.redact(&combined) {
            Cow::Owned(redacted) => Some(redacted),
            Cow::Borrowed(_) => None,
        };
        let mut combined = redacted.unwrap_or(combined);
        let keep = redactor.partial_secret_suffix(&combined);
        if keep > 0 {
            *held = Some(combined.split_off(combined.len() - keep));
        }
        if !combined.is_empty() {
            out.push(delta(thinking, combined));
        }
    }
}

fn delta(thinking: bool, text: String) -> Event {
    if thinking {
        Event::ThinkingDelta { text }
    } else {
        Event::TextDelta { text }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_secrets_are_collected_by_name() {
        let mut r = Redactor::new();
        r.add_env([
            ("ANTHROPIC_API_KEY", "sk-ant-secret-1"),
            ("HOME", "/root/home-dir"),
        ]);
        assert_eq!(
            r.redact("sk-ant-secret-1 in /root/home-dir"),
            "[redacted] in /root/home-dir"
        );
        r.add("short");
        assert_eq!(r.redact("short"), "short");
    }

    const KEY: &str = "sk-ant-canary-7f3c9a1e5b";

    fn redactor() -> Redactor {
        let mut r = Redactor::new();
        r.add(KEY);
        r.add("tok-6a0e55c1-secret");
        r
    }

    /// Runs `events` through a guard, then releases what it holds.
    fn guarded(redactor: &Redactor, events: Vec<Event>) -> Vec<Event> {
        let mut guard = SplitSecretGuard::default();
        let mut out = Vec::new();
        for event in events {
            guard.pass(event, redactor, &mut out);
        }
        guard.release(&mut out);
        out
    }

    fn text(s: &str) -> Event {
        Event::TextDelta { text: s.into() }
    }

    fn thinking(s: &str) -> Event {
        Event::ThinkingDelta { text: s.into() }
    }

    fn joined(events: &[Event], want_thinking: bool) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                Event::TextDelta { text } if !want_thinking => Some(text.as_str()),
                Event::ThinkingDelta { text } if want_thinking => Some(text.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_secret_split_across_deltas_is_redacted_at_every_split_point() {
        let r = redactor();
        let streamed = format!("my key is {KEY}, keep it safe");
        // Every way of cutting the text into three pieces around the key.
        for a in 1..streamed.len() - 1 {
            for b in [a + 1, (a + 7).min(streamed.len() - 1)] {
                let pieces = [&streamed[..a], &streamed[a..b], &streamed[b..]];
                let out = guarded(&r, pieces.iter().map(|p| text(p)).collect());
                assert_eq!(
                    joined(&out, false),
                    "my key is [redacted], keep it safe",
                    "{pieces:?}"
                );
                for event in &out {
                    let Event::TextDelta { text } = event else {
                        panic!("{event:?}")
                    };
                    // No single delta shows more than a prefix shorter than the whole key.
                    assert!(!text.contains(KEY), "{pieces:?}");
                }
            }
        }
    }

    #[test]
    fn text_that_only_looks_like_a_secret_start_is_delivered_unchanged_and_in_order() {
        let r = redactor();
        let out = guarded(
            &r,
            vec![
                text("asks"),
                text("-an"),
                Event::BlockReset,
                text("tok-6a"),
                thinking("so"),
                thinking("me s"),
                text("end"),
            ],
        );
        assert_eq!(
            out,
            vec![
                text("ask"),
                text("s-an"),
                Event::BlockReset,
                // `tok-6a` could begin the token: it waits for the next answer delta, past
                // the thinking (its own stream).
                thinking("so"),
                thinking("me "),
                text("tok-6aend"),
                thinking("s"),
            ]
        );
    }

    #[test]
    fn a_secret_split_across_thinking_deltas_is_redacted_too() {
        let r = redactor();
        let out = guarded(
            &r,
            vec![thinking("tok-6a0e"), thinking("55c1-secret."), text("ok")],
        );
        assert_eq!(joined(&out, true), "[redacted].");
        assert_eq!(joined(&out, false), "ok");
    }

    #[test]
    fn without_secrets_events_pass_through_untouched() {
        let events = vec![text("sk-"), text(""), thinking("x"), Event::BlockReset];
        assert_eq!(guarded(&Redactor::new(), events.clone()), events);
    }

    #[test]
    fn held_text_is_bounded_by_the_longest_secret_and_keeps_multibyte_text_whole() {
        let r = redactor();
        assert_eq!(r.partial_secret_suffix("ünïcødé s"), 1);
        assert_eq!(r.partial_secret_suffix("ünïcødé"), 0);
        let almost = &KEY[..KEY.len() - 1];
        assert_eq!(
            r.partial_secret_suffix(&format!("xx{almost}")),
            almost.len()
        );
        // A long run of secret-start characters holds back one at a time.
        let many: Vec<Event> = (0..1000).map(|_| text("s")).collect();
        let out = guarded(&r, many);
        assert_eq!(joined(&out, false), "s".repeat(1000));
        assert_eq!(out.len(), 1000);
    }
}
