//! The native Codex binary behind the npm shim.
//!
//! `npm i -g @openai/codex` installs `bin/codex.js`, a Node script that only finds the native
//! binary in the platform package (`@openai/codex-<platform>/vendor/<target>/bin/codex`) and
//! `execve`s it. Running that binary directly saves Node's start-up (about 0.2 s and 40 MB per
//! turn, reference §1). The shim also sets `CODEX_MANAGED_BY_NPM=1` and
//! `CODEX_MANAGED_PACKAGE_ROOT`, which Codex uses for its update hints; [`NativeCodex::env`]
//! gives the same two variables.

use std::path::{Path, PathBuf};

/// The platform package suffix and Rust target of this build, as the shim spells them.
pub const fn platform() -> Option<(&'static str, &'static str)> {
    if cfg!(all(target_os = "linux", target_arch = "x86_64")) {
        Some(("linux-x64", "x86_64-unknown-linux-musl"))
    } else if cfg!(all(target_os = "linux", target_arch = "aarch64")) {
        Some(("linux-arm64", "aarch64-unknown-linux-musl"))
    } else if cfg!(all(target_os = "macos", target_arch = "x86_64")) {
        Some(("darwin-x64", "x86_64-apple-darwin"))
    } else if cfg!(all(target_os = "macos", target_arch = "aarch64")) {
        Some(("darwin-arm64", "aarch64-apple-darwin"))
    } else if cfg!(all(target_os = "windows", target_arch = "x86_64")) {
        Some(("win32-x64", "x86_64-pc-windows-msvc"))
    } else if cfg!(all(target_os = "windows", target_arch = "aarch64")) {
        Some(("win32-arm64", "aarch64-pc-windows-msvc"))
    } else {
        None
    }
}

/// The binary to run and the environment the shim would have given it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeCodex {
    /// What to execute.
    pub program: PathBuf,
    /// The `@openai/codex` package root, when `program` was found behind the npm shim.
    pub package_root: Option<PathBuf>,
}

impl NativeCodex {
    /// The variables the npm shim sets for the native binary (none when it is not behind one).
    pub fn env(&self) -> Vec<(&'static str, PathBuf)> {
        match &self.package_root {
            Some(root) => vec![
                ("CODEX_MANAGED_BY_NPM", PathBuf::from("1")),
                ("CODEX_MANAGED_PACKAGE_ROOT", root.clone()),
            ],
            None => Vec::new(),
        }
    }
}

/// The `@openai/codex` package root that `resolved` (a `codex` found on PATH or elsewhere)
/// belongs to, when it is the npm shim: a symlink to `…/@openai/codex/bin/codex.js`, or on
/// Windows the `codex.cmd` next to `node_modules/@openai/codex`.
fn shim_package_root(resolved: &Path) -> Option<PathBuf> {
    let real = std::fs::canonicalize(resolved).ok()?;
    let name = real.file_name()?.to_string_lossy().to_ascii_lowercase();
    if name == "codex.js" {
        let bin = real.parent()?;
        return (bin.file_name()? == "bin").then(|| bin.parent().map(Path::to_path_buf))?;
    }
    if name == "codex.cmd" || name == "codex.ps1" {
        let root = real.parent()?.join("node_modules/@openai/codex");
        return root.is_dir().then_some(root);
    }
    None
}

/// The native binary for a `codex` that was resolved on PATH: the platform package's binary when
/// `resolved` is the npm shim and the binary is there, otherwise `resolved` itself.
pub fn native_behind(resolved: &Path) -> NativeCodex {
    let fallback = NativeCodex {
        program: resolved.to_path_buf(),
        package_root: None,
    };
    let (Some(root), Some((suffix, target))) = (shim_package_root(resolved), platform()) else {
        return fallback;
    };
    let exe = if cfg!(windows) { "codex.exe" } else { "codex" };
    let package = format!("codex-{suffix}");
    let candidates = [
        // npm nests the optional dependency, or hoists it next to @openai/codex.
        root.join("node_modules/@openai").join(&package),
        root.parent()
            .map(|scope| scope.join(&package))
            .unwrap_or_default(),
        // Older releases vendored the binary in the main package.
        root.clone(),
    ];
    candidates
        .iter()
        .map(|dir| dir.join("vendor").join(target).join("bin").join(exe))
        .find(|p| p.is_file())
        .map(|program| NativeCodex {
            program,
            package_root: Some(root.clone()),
        })
        .unwrap_or(fallback)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn finds_the_hoisted_platform_binary_behind_the_bin_symlink() {
        let Some((suffix, target)) = platform() else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let nm = dir.path().join("node_modules");
        let pkg = nm.join("@openai/codex");
        std::fs::create_dir_all(pkg.join("bin")).unwrap();
        std::fs::write(pkg.join("bin/codex.js"), "#!/usr/bin/env node\n").unwrap();
        std::fs::create_dir_all(nm.join(".bin")).unwrap();
        std::os::unix::fs::symlink("../@openai/codex/bin/codex.js", nm.join(".bin/codex")).unwrap();
        // No platform package yet: the shim itself.
        let shim = nm.join(".bin/codex");
        assert_eq!(native_behind(&shim).program, shim);
        let bin = nm
            .join(format!("@openai/codex-{suffix}/vendor"))
            .join(target)
            .join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(bin.join("codex"), "").unwrap();
        let native = native_behind(&shim);
        assert_eq!(native.program, bin.join("codex"));
        let root = std::fs::canonicalize(&pkg).unwrap();
        assert_eq!(native.package_root.as_deref(), Some(root.as_path()));
        assert_eq!(
            native.env()[0],
            ("CODEX_MANAGED_BY_NPM", PathBuf::from("1"))
        );
    }

    #[test]
    fn a_native_install_is_used_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("codex");
        std::fs::write(&exe, "").unwrap();
        let native = native_behind(&exe);
        assert_eq!(native.program, exe);
        assert!(native.env().is_empty());
    }
}
