//! The corpus is self-contained and agrees with the installer: every provider's pinned corpus
//! version is the version `tests/install-clis.sh` installs, every provider directory has its
//! pinned version recorded, and no recorded file holds a machine path of this checkout.

use std::path::Path;

/// `(exposed bin name, version, second)` of every row of the installer's npm and PyPI tables;
/// `second` for a second tested version (`newest`, or `previous` where the pinned is the newest).
fn installer_rows() -> Vec<(String, String, bool)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../install-clis.sh");
    let text = std::fs::read_to_string(&script).expect("tests/install-clis.sh is readable");
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with('"') && l.ends_with('"'))
        .map(|l| l.trim_matches('"').split_whitespace().collect::<Vec<_>>())
        .filter(|w| w.len() >= 3)
        .map(|w| {
            let exposed = w.iter().find_map(|x| x.strip_prefix("as=")).unwrap_or(w[2]);
            let second = w.contains(&"newest") || w.contains(&"previous");
            (exposed.to_string(), w[1].to_string(), second)
        })
        .collect()
}

#[test]
fn pinned_corpus_versions_are_the_installed_versions() {
    let rows = installer_rows();
    assert!(rows.len() >= 10, "installer table read: {rows:?}");
    let versions = std::fs::read_to_string(captures::dir().join("versions")).unwrap();
    let pinned = captures::pinned_versions(&versions);
    assert!(pinned.len() >= 9, "{pinned:?}");
    for (provider, version) in pinned {
        let row = rows
            .iter()
            .find(|(bin, _, second)| *bin == provider && !second);
        assert_eq!(
            row.map(|(_, v, _)| v.as_str()),
            Some(version.as_str()),
            "{provider}: corpus pinned version vs tests/install-clis.sh"
        );
        assert!(
            captures::versions(&provider).contains(&version),
            "{provider}: no recordings of the pinned version {version}"
        );
        assert!(!captures::names(&provider).is_empty(), "{provider}");
    }
}

/// The second version of a provider (`newest` or `previous` in the installer) is recorded too,
/// so the replay snapshots cover both and a format change between them shows as a snapshot
/// difference.
#[test]
fn the_second_installed_versions_are_recorded() {
    let second: Vec<_> = installer_rows().into_iter().filter(|r| r.2).collect();
    assert!(second.len() >= 7, "{second:?}");
    for (provider, version, _) in second {
        assert!(
            captures::versions(&provider).contains(&version),
            "{provider} {version} is installed as a second version but not recorded \
             (scripts/record --newest/--previous {provider})"
        );
        let name = captures::name(&provider, &version, "text");
        assert!(!captures::stdout(&name).is_empty(), "{name}");
    }
}

#[test]
fn capture_names_round_trip_to_their_files() {
    assert_eq!(captures::name("claude", "2.1.197", "text"), "claude-text");
    assert_eq!(
        captures::name("claude", "2.1.332", "tool-allowed"),
        "claude@2.1.332-tool-allowed"
    );
    for name in [
        "claude-text",
        "claude@2.1.332-tool-allowed",
        "grok-cli-text",
    ] {
        assert!(!captures::stdout(name).is_empty(), "{name}");
    }
}

#[test]
fn no_recorded_file_holds_a_path_of_this_checkout() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap();
    let root = root.to_string_lossy().into_owned();
    let home = std::env::var("HOME").unwrap_or_default();
    let mut checked = 0;
    let mut stack = vec![captures::dir()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().filter_map(|e| e.ok()) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let text = String::from_utf8_lossy(&std::fs::read(&path).unwrap()).into_owned();
            assert!(!text.contains(&root), "{} names {root}", path.display());
            // The e2e canary key (tests/common) is redacted by the bridge and the recorder.
            assert!(
                !text.contains("sk-ant-canary"),
                "{} holds the canary key",
                path.display()
            );
            if home.len() > 1 {
                assert!(
                    !text.contains(&format!("{home}/")),
                    "{} names {home}",
                    path.display()
                );
            }
            checked += 1;
        }
    }
    assert!(checked > 100, "{checked} files checked");
}
