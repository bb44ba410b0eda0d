//! The ai-bridge compatibility commands: `getSdkStatus`, `checkClaudeSdk`, `checkCodexSdk`.
//!
//! ai-bridge answered them by checking that an SDK package directory exists. The bridge drives
//! the CLIs themselves, so "installed" means: the CLI's executable is found by the same search
//! as every channel uses (env overrides, PATH, the login shell's PATH when it is not found
//! otherwise, the usual install dirs). Nothing is executed besides, when needed, the login shell.

use std::path::{Path, PathBuf};

use sdk_probe::{ProbeEnv, ProbeSpec, resolve, resolve_binary};

use super::Options;
use super::status::login_path;

/// One provider's answer to `getSdkStatus`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SdkStatus {
    /// Provider id (`"claude"`).
    pub provider: String,
    /// The CLI was found.
    pub installed: bool,
    /// Where it was found; when it is missing, where it would be expected ([`expected_path`]).
    pub path: String,
}

/// Resolves the providers `ids` (ids without a spec are reported missing). Resolution warnings
/// (an env override that points nowhere) go to stderr.
pub async fn sdk_status(specs: &[ProbeSpec], ids: &[&str], options: &Options) -> Vec<SdkStatus> {
    let wanted: Vec<ProbeSpec> = ids
        .iter()
        .filter_map(|id| specs.iter().find(|s| s.id == *id).copied())
        .collect();
    let missing = wanted
        .iter()
        .any(|s| resolve(s, &options.env).found.is_none());
    let env = match login_path(options, missing).await {
        (Some(path), _) => options.env.clone().with_login_path(path),
        (None, _) => options.env.clone(),
    };
    ids.iter()
        .map(|id| {
            let spec = wanted.iter().find(|s| s.id == *id);
            let resolution = spec.map(|s| resolve(s, &env)).unwrap_or_default();
            for warning in &resolution.warnings {
                super::diag(warning);
            }
            let found = resolution.found;
            let path = match (&found, spec) {
                (Some(found), _) => found.path.clone(),
                (None, Some(spec)) => expected_path(spec, &env),
                (None, None) => PathBuf::from(id),
            };
            SdkStatus {
                provider: (*id).to_owned(),
                installed: found.is_some(),
                path: path.to_string_lossy().into_owned(),
            }
        })
        .collect()
}

/// Where a missing CLI would be after its install hint ran:
///
/// - an npm global install (`npm i -g …`): npm's global bin dir, i.e. `$NPM_CONFIG_PREFIX/bin`,
///   else the `prefix=` of `~/.npmrc` + `/bin`, else the directory of the `node` found by the
///   usual search (npm installs global bins next to node), else `~/.local/bin`;
/// - anything else: `~/.local/bin`;
///
/// joined with the spec's first binary name (just the name without HOME).
pub fn expected_path(spec: &ProbeSpec, env: &ProbeEnv) -> PathBuf {
    let binary = spec.binaries.first().copied().unwrap_or(spec.id);
    let npm_global = {
        let words: Vec<&str> = spec.install_hint.split_whitespace().collect();
        words.first() == Some(&"npm") && words.iter().any(|w| matches!(*w, "-g" | "--global"))
    };
    let dir = if npm_global { npm_bin_dir(env) } else { None }
        .or_else(|| env.home().map(|h| h.join(".local").join("bin")));
    match dir {
        Some(dir) => dir.join(binary),
        None => PathBuf::from(binary),
    }
}

fn npm_bin_dir(env: &ProbeEnv) -> Option<PathBuf> {
    let prefix_bin = |prefix: PathBuf| {
        if cfg!(windows) {
            prefix
        } else {
            prefix.join("bin")
        }
    };
    for var in ["NPM_CONFIG_PREFIX", "npm_config_prefix"] {
        if let Some(p) = env.var_non_empty(var).map(PathBuf::from)
            && p.is_absolute()
        {
            return Some(prefix_bin(p));
        }
    }
    if let Some(home) = env.home()
        && let Some(prefix) = npmrc_prefix(&home.join(".npmrc"), home)
    {
        return Some(prefix_bin(prefix));
    }
    const NODE: ProbeSpec = ProbeSpec::new("node", "Node.js", &["node"]);
    resolve_binary(&NODE, env).and_then(|n| n.path.parent().map(Path::to_owned))
}

/// `prefix=…` from an `.npmrc` (`~` and `${HOME}` expanded), if absolute.
fn npmrc_prefix(file: &Path, home: &Path) -> Option<PathBuf> {
    let text = std::fs::read_to_string(file).ok()?;
    let value = text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "prefix").then(|| v.trim().trim_matches('"').to_owned())
    })?;
    let home_s = home.to_string_lossy();
    let value = value.replace("${HOME}", &home_s).replace("$HOME", &home_s);
    let p = match value.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(value),
    };
    p.is_absolute().then_some(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npmrc_prefix_is_read_and_expanded() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path();
        let rc = home.join(".npmrc");
        std::fs::write(&rc, "registry=https://x\nprefix = ~/.npm-global\n").unwrap();
        assert_eq!(npmrc_prefix(&rc, home), Some(home.join(".npm-global")));
        std::fs::write(&rc, "prefix=${HOME}/npm\n").unwrap();
        assert_eq!(npmrc_prefix(&rc, home), Some(home.join("npm")));
        std::fs::write(&rc, "prefix=relative\n").unwrap();
        assert_eq!(npmrc_prefix(&rc, home), None);
        assert_eq!(npmrc_prefix(&home.join("absent"), home), None);
    }

    #[test]
    fn expected_path_follows_the_install_hint() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap();
        let nodebin = dir.path().join("node/bin");
        std::fs::create_dir_all(&nodebin).unwrap();
        let node = nodebin.join("node");
        std::fs::write(&node, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&node, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let spec = crate::codex::PROBE;
        let env = ProbeEnv::empty().with_home(&home);
        assert_eq!(expected_path(&spec, &env), home.join(".local/bin/codex"));
        let with_node = env.clone().with_path(nodebin.as_os_str());
        assert_eq!(expected_path(&spec, &with_node), nodebin.join("codex"));
        let with_prefix = with_node.with_var("NPM_CONFIG_PREFIX", "/opt/npm");
        assert_eq!(
            expected_path(&spec, &with_prefix),
            PathBuf::from("/opt/npm/bin/codex")
        );
        let curl = ProbeSpec {
            install_hint: "curl -fsSL https://x/install.sh | bash",
            ..spec
        };
        assert_eq!(expected_path(&curl, &env), home.join(".local/bin/codex"));
        assert_eq!(
            expected_path(&spec, &ProbeEnv::empty()),
            PathBuf::from("codex")
        );
    }
}
