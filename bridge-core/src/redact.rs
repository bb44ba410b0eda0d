//! Keeps secrets out of everything the bridge prints.
//!
//! The request's `apiKey` and the values of credential-like environment variables are collected
//! once; every output line passes through [`Redactor::redact`] before it is written, so a CLI
//! that echoes its key in an error message cannot leak it through the bridge.

use std::borrow::Cow;

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
}
