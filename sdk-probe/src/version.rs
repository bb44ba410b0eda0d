//! `major.minor.patch` versions, lenient parsing of `--version` output, tested ranges.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A `major.minor.patch` version. Pre-release and build suffixes are ignored.
///
/// Serialized as the string `"2.1.197"`.
///
/// ```
/// use sdk_probe::Version;
/// assert_eq!(Version::parse_lenient("2.1.197 (Claude Code)"), Some(Version::new(2, 1, 197)));
/// assert_eq!(Version::parse_lenient("codex-cli 0.171.0"), Some(Version::new(0, 171, 0)));
/// assert_eq!(Version::parse_lenient("no digits here"), None);
/// assert!(Version::new(0, 171, 0) < Version::new(0, 172, 0));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Version {
    /// Major.
    pub major: u64,
    /// Minor.
    pub minor: u64,
    /// Patch.
    pub patch: u64,
}

impl Version {
    /// `major.minor.patch`.
    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {
        Version {
            major,
            minor,
            patch,
        }
    }

    /// Finds the first version in free text: the first `x.y.z` (digits not glued to a preceding
    /// digit, dot or letter other than `v`), or failing that the first `x.y` (patch 0).
    ///
    /// Handles `2.1.197 (Claude Code)`, `codex-cli 0.171.0`, `v1.2.3`, `kimi, version 1.51.0`,
    /// `1.0.0-beta.2`, colour escapes. Returns `None` for text without a version.
    pub fn parse_lenient(text: &str) -> Option<Version> {
        let text = strip_ansi(text);
        find_dotted(text.as_bytes(), 3).or_else(|| find_dotted(text.as_bytes(), 2))
    }
}

/// Removes ANSI CSI sequences (`ESC [ … final`) and other two-byte escapes.
pub(crate) fn strip_ansi(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
        } else if chars.peek() == Some(&'[') {
            chars.next();
            for c2 in chars.by_ref() {
                if ('@'..='~').contains(&c2) {
                    break;
                }
            }
        } else {
            chars.next();
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Scans for `parts` dot-separated decimal numbers starting at a token boundary.
fn find_dotted(b: &[u8], parts: usize) -> Option<Version> {
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() && at_boundary(b, i) {
            if let Some((v, _)) = read_dotted(b, i, parts) {
                return Some(v);
            }
            // Skip the rest of this digit run.
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            continue;
        }
        i += 1;
    }
    None
}

fn at_boundary(b: &[u8], i: usize) -> bool {
    if i == 0 {
        return true;
    }
    let prev = b[i - 1];
    if prev == b'v' || prev == b'V' {
        // `v1.2.3` counts when the `v` itself starts a token (so `dev1.2.3` does not).
        return i < 2 || !b[i - 2].is_ascii_alphanumeric();
    }
    !(prev.is_ascii_alphanumeric() || prev == b'.' || prev == b'_')
}

fn read_dotted(b: &[u8], mut i: usize, parts: usize) -> Option<(Version, usize)> {
    let mut nums = [0u64; 3];
    for (k, slot) in nums.iter_mut().enumerate().take(parts) {
        if k > 0 {
            if b.get(i) != Some(&b'.') {
                return None;
            }
            i += 1;
        }
        let start = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        if i == start || i - start > 19 {
            return None;
        }
        *slot = std::str::from_utf8(&b[start..i]).ok()?.parse().ok()?;
    }
    // `x.y` must not be the prefix of a longer dotted run we rejected (e.g. an IPv4 address is
    // fine as x.y.z; but for the two-part fallback, `1.2.` followed by a digit is not `1.2`).
    if parts == 2 && b.get(i) == Some(&b'.') && b.get(i + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    Some((Version::new(nums[0], nums[1], nums[2]), i))
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

/// A string that is not exactly `x.y.z` (or `x.y`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a version: {0:?}")]
pub struct VersionParseError(String);

impl FromStr for Version {
    type Err = VersionParseError;

    /// Strict: the whole string (trimmed, optional leading `v`) must be `x.y.z` or `x.y`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let t = s.trim();
        let t = t.strip_prefix(['v', 'V']).unwrap_or(t);
        let b = t.as_bytes();
        for parts in [3, 2] {
            if let Some((v, end)) = read_dotted(b, 0, parts)
                && end == b.len()
            {
                return Ok(v);
            }
        }
        Err(VersionParseError(s.chars().take(64).collect()))
    }
}

impl Serialize for Version {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Version {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// The versions a channel has been tested with: `min..=max`, both inclusive.
///
/// Serialized as `{"min":"0.171.0","max":"0.171.0"}`; displayed as `0.171.0–0.171.0`.
///
/// ```
/// use sdk_probe::{Version, VersionRange};
/// let r = VersionRange::new(Version::new(2, 1, 197), Version::new(2, 1, 332));
/// assert!(r.contains(Version::new(2, 1, 200)));
/// assert!(r.contains(Version::new(2, 1, 332)));
/// assert!(!r.contains(Version::new(2, 2, 0)));
/// assert_eq!(r.to_string(), "2.1.197–2.1.332");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VersionRange {
    /// Lowest tested version (inclusive).
    pub min: Version,
    /// Highest tested version (inclusive).
    pub max: Version,
}

impl VersionRange {
    /// `min..=max`.
    pub const fn new(min: Version, max: Version) -> Self {
        VersionRange { min, max }
    }

    /// Exactly one version.
    pub const fn exactly(v: Version) -> Self {
        VersionRange { min: v, max: v }
    }

    /// Whether `v` is inside the range.
    pub fn contains(&self, v: Version) -> bool {
        self.min <= v && v <= self.max
    }
}

impl fmt::Display for VersionRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}–{}", self.min, self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Row = (&'static str, Option<(u64, u64, u64)>);

    #[test]
    fn lenient_real_outputs() {
        #[rustfmt::skip]
        let table: &[Row] = &[
            ("2.1.197 (Claude Code)\n",                           Some((2, 1, 197))),
            ("codex-cli 0.171.0",                                 Some((0, 171, 0))),
            ("0.61.0",                                            Some((0, 61, 0))),
            ("1.0.102",                                           Some((1, 0, 102))),
            ("opencode 1.18.33",                                  Some((1, 18, 33))),
            ("kimi, version 1.51.0",                              Some((1, 51, 0))),
            ("1.52.0\nkimi-cli is no longer maintained…",         Some((1, 52, 0))),
            ("v22.11.0",                                          Some((22, 11, 0))),
            ("Version: V3.4.5",                                   Some((3, 4, 5))),
            ("\u{1b}[32m1.2.3\u{1b}[0m",                          Some((1, 2, 3))),
            ("1.0.0-beta.2+build.5",                              Some((1, 0, 0))),
            ("1.2.3.4",                                           Some((1, 2, 3))),
            ("node 20 with pi 0.73.1",                            Some((0, 73, 1))),
            ("tool 2.5",                                          Some((2, 5, 0))),
            ("dev1.2.3 then 4.5.6",                               Some((4, 5, 6))),
            ("x86_64 build 10.2.0",                               Some((10, 2, 0))),
            ("garbage ¯\\_(ツ)_/¯",                               None),
            ("",                                                  None),
            ("1.",                                                None),
            ("99999999999999999999999.1.1",                       None),
        ];
        for &(text, expected) in table {
            assert_eq!(
                Version::parse_lenient(text),
                expected.map(|(a, b, c)| Version::new(a, b, c)),
                "{text:?}"
            );
        }
    }

    #[test]
    fn strict_parse_and_serde() {
        assert_eq!("1.2.3".parse(), Ok(Version::new(1, 2, 3)));
        assert_eq!("v1.2".parse(), Ok(Version::new(1, 2, 0)));
        assert!("1.2.3 x".parse::<Version>().is_err());
        assert!("".parse::<Version>().is_err());
        let v = Version::new(0, 171, 0);
        assert_eq!(serde_json::to_string(&v).unwrap(), "\"0.171.0\"");
        assert_eq!(serde_json::from_str::<Version>("\"0.171.0\"").unwrap(), v);
        let r = VersionRange::exactly(v);
        assert_eq!(
            serde_json::to_value(r).unwrap(),
            serde_json::json!({"min": "0.171.0", "max": "0.171.0"})
        );
    }

    #[test]
    fn ordering_is_numeric() {
        assert!(Version::new(1, 10, 0) > Version::new(1, 9, 99));
        assert!(Version::new(2, 0, 0) > Version::new(1, 99, 99));
    }
}
