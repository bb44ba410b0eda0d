//! The probe against fake CLIs: small shell scripts in temporary dirs, with a fake HOME and PATH
//! injected through `ProbeEnv` (the real environment is never read).
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use sdk_probe::{
    AuthKind, AuthSource, ProbeEnv, ProbeError, ProbeSpec, Prober, Source, Status, Version,
    VersionCache, VersionRange, login_shell_path, probe, probe_all, probe_version_in, resolve,
    resolve_binary,
};
use tempfile::TempDir;

const T: Duration = Duration::from_secs(10);

struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
    home: PathBuf,
    bin: PathBuf,
}

impl Sandbox {
    fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        let home = root.join("home");
        let bin = root.join("bin");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&bin).unwrap();
        Sandbox {
            _tmp: tmp,
            root,
            home,
            bin,
        }
    }

    /// HOME = sandbox home, PATH = sandbox bin + the system's basic dirs, nothing else.
    fn env(&self) -> ProbeEnv {
        ProbeEnv::empty()
            .with_home(&self.home)
            .with_path(format!("{}:/usr/bin:/bin", self.bin.display()))
    }

    fn script(&self, dir: &Path, name: &str, body: &str) -> PathBuf {
        script(dir, name, body)
    }
}

fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn spec(id: &'static str) -> ProbeSpec {
    // Leak the one-element slice so the spec stays `'static` like a real `const`.
    let bins: &'static [&'static str] = Box::leak(Box::new([id]));
    ProbeSpec {
        tested: Some(VersionRange::new(
            Version::new(2, 1, 197),
            Version::new(2, 1, 332),
        )),
        install_hint: "npm i -g @example/fake-cli",
        ..ProbeSpec::new(id, "Fake CLI", bins)
    }
}

/// A process is gone when it no longer exists or is a zombie waiting for init.
fn alive(pid: i32) -> bool {
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        let state = stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next());
        return state != Some("Z");
    }
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

fn wait_dead(pids: &[i32]) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while pids.iter().any(|&p| alive(p)) {
        assert!(
            Instant::now() < deadline,
            "still alive: {:?}",
            pids.iter().filter(|&&p| alive(p)).collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_pids(file: &Path, n: usize) -> Vec<i32> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let pids: Vec<i32> = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect();
        if pids.len() >= n {
            return pids;
        }
        assert!(Instant::now() < deadline, "pid file {file:?} incomplete");
        std::thread::sleep(Duration::from_millis(10));
    }
}

// ---- resolution ------------------------------------------------------------------------------

#[tokio::test]
async fn version_on_path_in_range() {
    let sb = Sandbox::new();
    let p = sb.script(&sb.bin, "fakeclaude", "echo '2.1.197 (Claude Code)'");
    let r = probe(&spec("fakeclaude"), &sb.env(), T).await;
    assert!(r.installed);
    assert_eq!(r.path.as_deref(), Some(p.as_path()));
    assert_eq!(r.source, Some(Source::Path));
    assert_eq!(r.version, Some(Version::new(2, 1, 197)));
    assert_eq!(r.version_line.as_deref(), Some("2.1.197 (Claude Code)"));
    assert_eq!(r.in_tested_range, Some(true));
    assert_eq!(r.problem, None);
    assert_eq!(r.status, Status::Ready);
    assert_eq!(r.fix, None);
    assert!(r.is_ok());
}

#[tokio::test]
async fn version_outside_tested_range_is_the_problem() {
    let sb = Sandbox::new();
    sb.script(&sb.bin, "fakecodex", "echo 'codex-cli 3.0.0'");
    let r = probe(&spec("fakecodex"), &sb.env(), T).await;
    assert_eq!(r.version, Some(Version::new(3, 0, 0)));
    assert_eq!(r.in_tested_range, Some(false));
    assert_eq!(
        r.problem.as_deref(),
        Some("version 3.0.0 is outside the tested range 2.1.197–2.1.332")
    );
    assert_eq!(r.status, Status::Untested);
    assert_eq!(
        r.fix.as_deref(),
        Some("downgrade to a tested version (2.1.197–2.1.332): npm i -g @example/fake-cli@2.1.332")
    );
    assert!(!r.is_ok());

    sb.script(&sb.bin, "fakeold", "echo 'fakeold 2.0.5'");
    let r = probe(&spec("fakeold"), &sb.env(), T).await;
    assert_eq!(r.status, Status::Untested);
    assert_eq!(
        r.fix.as_deref(),
        Some("upgrade to a tested version (2.1.197–2.1.332): npm i -g @example/fake-cli@2.1.332")
    );
}

#[tokio::test]
async fn version_on_stderr_and_nonzero_exit_still_counts() {
    let sb = Sandbox::new();
    sb.script(&sb.bin, "fakeerr", "echo 'fakeerr 2.1.300' >&2; exit 3");
    let r = probe(&spec("fakeerr"), &sb.env(), T).await;
    assert_eq!(r.version, Some(Version::new(2, 1, 300)));
    assert_eq!(r.problem, None);
}

#[tokio::test]
async fn no_range_means_unknown_not_a_problem() {
    let sb = Sandbox::new();
    sb.script(&sb.bin, "fakenorange", "echo 9.9.9");
    let s = ProbeSpec {
        tested: None,
        ..spec("fakenorange")
    };
    let r = probe(&s, &sb.env(), T).await;
    assert_eq!(r.in_tested_range, None);
    assert_eq!(r.problem, None);
}

#[tokio::test]
async fn not_installed_names_the_install_command() {
    let sb = Sandbox::new();
    let r = probe(&spec("fakeabsent"), &sb.env(), T).await;
    assert!(!r.installed);
    assert_eq!(r.path, None);
    assert_eq!(r.version, None);
    assert_eq!(r.status, Status::NotInstalled);
    assert_eq!(
        r.fix.as_deref(),
        Some("install it: npm i -g @example/fake-cli@2.1.332")
    );
    let problem = r.problem.unwrap();
    assert!(problem.contains("not installed"), "{problem}");
    assert!(problem.contains("npm i -g @example/fake-cli"), "{problem}");

    // With an env override, the fix mentions it; without an install hint, it says what to do.
    let s = ProbeSpec {
        env_overrides: &["FAKE_BIN", "FAKE_PATH"],
        install_hint: "",
        ..spec("fakeabsent")
    };
    let r = probe(&s, &sb.env(), T).await;
    assert_eq!(
        r.fix.as_deref(),
        Some(
            "install Fake CLI and put `fakeabsent` on PATH (or set FAKE_BIN to an existing `fakeabsent`)"
        )
    );
}

#[tokio::test]
async fn found_in_user_local_bin_outside_path() {
    let sb = Sandbox::new();
    let dir = sb.home.join(".local/bin");
    let p = sb.script(&dir, "fakelocal", "echo 2.1.200");
    let env = sb.env();
    assert!(which_in_path(&env, "fakelocal").is_none());
    let r = probe(&spec("fakelocal"), &env, T).await;
    assert_eq!(r.path.as_deref(), Some(p.as_path()));
    assert_eq!(
        r.source,
        Some(Source::InstallDir {
            dir,
            via: "user-local"
        })
    );
    assert_eq!(r.version, Some(Version::new(2, 1, 200)));
}

fn which_in_path(env: &ProbeEnv, name: &str) -> Option<PathBuf> {
    which::which_in(name, env.path(), "/").ok()
}

#[tokio::test]
async fn spec_install_dir_is_searched_first_among_install_dirs() {
    let sb = Sandbox::new();
    let provider_dir = sb.home.join(".fake/bin");
    let p = sb.script(&provider_dir, "fakeprov", "echo 2.1.201");
    let other = sb.script(&sb.home.join(".bun/bin"), "fakeprov", "echo 2.1.202");
    let s = ProbeSpec {
        install_dirs: &[".fake/bin"],
        ..spec("fakeprov")
    };
    let res = resolve(&s, &sb.env());
    let found = res.found.unwrap();
    assert_eq!(found.path, p);
    assert_eq!(
        found.source,
        Source::InstallDir {
            dir: provider_dir,
            via: "provider"
        }
    );
    assert_eq!(res.also_found, vec![other]);
}

#[tokio::test]
async fn path_wins_and_shadowed_installs_are_listed() {
    let sb = Sandbox::new();
    let on_path = sb.script(&sb.bin, "fakeshadow", "echo 2.1.210");
    let local = sb.script(&sb.home.join(".local/bin"), "fakeshadow", "echo 2.1.211");
    let r = probe(&spec("fakeshadow"), &sb.env(), T).await;
    assert_eq!(r.path, Some(on_path));
    assert_eq!(r.source, Some(Source::Path));
    assert_eq!(r.also_found, vec![local]);
}

/// nvm: the newest node version wins, and a `#!/usr/bin/env node`-style shim finds the
/// interpreter next to it even though that dir is not on PATH.
#[tokio::test]
async fn nvm_newest_version_and_shim_interpreter_next_to_it() {
    let sb = Sandbox::new();
    let nvm = sb.home.join(".nvm/versions/node");
    let old = nvm.join("v18.20.0/bin");
    let new = nvm.join("v20.11.1/bin");
    for (dir, v) in [(&old, "2.1.250"), (&new, "2.1.260")] {
        // The "node" interpreter of this node version, and the CLI shim that needs it.
        script(dir, "fakenode", &format!("echo 'fakenvm {v}'"));
        std::fs::write(dir.join("fakenvm"), "#!/usr/bin/env fakenode\n").unwrap();
        std::fs::set_permissions(dir.join("fakenvm"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
    }
    let env = sb.env();
    let r = probe(&spec("fakenvm"), &env, T).await;
    assert_eq!(r.path, Some(new.join("fakenvm")));
    assert_eq!(
        r.source,
        Some(Source::InstallDir {
            dir: new.clone(),
            via: "nvm"
        })
    );
    assert_eq!(r.also_found, vec![old.join("fakenvm")]);
    assert_eq!(r.version, Some(Version::new(2, 1, 260)), "{:?}", r.problem);

    // $NVM_DIR elsewhere is honoured too.
    let elsewhere = sb.root.join("nvm-elsewhere/versions/node/v22.1.0/bin");
    let p = script(&elsewhere, "fakenvm2", "echo 2.1.270");
    let env = env.with_var("NVM_DIR", sb.root.join("nvm-elsewhere"));
    assert_eq!(resolve_binary(&spec("fakenvm2"), &env).unwrap().path, p);
}

#[tokio::test]
async fn npm_prefix_volta_bun_cargo_and_system_dirs() {
    let sb = Sandbox::new();
    let prefix = sb.root.join("npm-prefix");
    let cases: [(PathBuf, &str); 5] = [
        (prefix.join("bin"), "npm-prefix"),
        (sb.home.join(".volta/bin"), "volta"),
        (sb.home.join(".bun/bin"), "bun"),
        (sb.home.join(".cargo/bin"), "cargo"),
        (sb.root.join("opt-homebrew-bin"), "system"),
    ];
    let env = sb
        .env()
        .with_var("NPM_CONFIG_PREFIX", &prefix)
        .with_system_dirs(vec![sb.root.join("opt-homebrew-bin")]);
    for (i, (dir, via)) in cases.iter().enumerate() {
        let name: &'static str = Box::leak(format!("fakedir{i}").into_boxed_str());
        let p = script(dir, name, "echo 2.1.197");
        let found = resolve_binary(&spec(name), &env).unwrap();
        assert_eq!(found.path, p, "{via}");
        assert_eq!(
            found.source,
            Source::InstallDir {
                dir: dir.clone(),
                via
            }
        );
    }
}

#[tokio::test]
async fn env_override_file_dir_and_invalid() {
    let sb = Sandbox::new();
    // A file with a different name than the binary.
    let custom = sb.script(&sb.root.join("custom"), "my-build-of-cli", "echo 2.1.220");
    sb.script(&sb.bin, "fakeover", "echo 2.1.221");
    let s = ProbeSpec {
        env_overrides: &["FAKE_CLI_PATH", "FAKE_BIN"],
        ..spec("fakeover")
    };

    let r = probe(&s, &sb.env().with_var("FAKE_CLI_PATH", &custom), T).await;
    assert_eq!(r.path.as_deref(), Some(custom.as_path()));
    assert_eq!(
        r.source,
        Some(Source::Env {
            var: "FAKE_CLI_PATH".into()
        })
    );
    assert_eq!(r.version, Some(Version::new(2, 1, 220)));
    assert_eq!(r.also_found, vec![sb.bin.join("fakeover")]);

    // A directory holding the binary, through the second variable; `~/` expanded.
    let d = sb.home.join("tools");
    let in_dir = sb.script(&d, "fakeover", "echo 2.1.222");
    let r = resolve(&s, &sb.env().with_var("FAKE_BIN", "~/tools"));
    assert_eq!(r.found.unwrap().path, in_dir);

    // Pointing nowhere: a warning, and PATH is used.
    let r = probe(
        &s,
        &sb.env().with_var("FAKE_CLI_PATH", sb.root.join("missing")),
        T,
    )
    .await;
    assert_eq!(r.source, Some(Source::Path));
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0].starts_with("FAKE_CLI_PATH is set to"),
        "{:?}",
        r.warnings
    );

    // A non-executable file is not used.
    let plain = sb.root.join("plain");
    std::fs::write(&plain, "echo 1.0.0").unwrap();
    let r = resolve(&s, &sb.env().with_var("FAKE_CLI_PATH", &plain));
    assert_eq!(r.found.unwrap().source, Source::Path);
    assert!(
        r.warnings[0].contains("not an executable"),
        "{:?}",
        r.warnings
    );
}

// ---- running --version ---------------------------------------------------------------------

#[tokio::test]
async fn garbage_output_is_unparseable_not_a_panic() {
    let sb = Sandbox::new();
    let p = sb.script(
        &sb.bin,
        "fakegarbage",
        r"printf '\377\376\033[31mnot a version\033[0m\n'; head -c 20000 /dev/zero; echo; echo still no digits",
    );
    let err = probe_version_in(&sb.env(), &p, &["--version"], T)
        .await
        .unwrap_err();
    match &err {
        ProbeError::Unparseable {
            command,
            first_line,
            exit_code,
        } => {
            assert_eq!(command, "fakegarbage --version");
            assert_eq!(first_line, "��not a version");
            assert_eq!(*exit_code, Some(0));
        }
        other => panic!("{other:?}"),
    }
    let r = probe(&spec("fakegarbage"), &sb.env(), T).await;
    assert!(r.installed);
    assert_eq!(r.version, None);
    assert_eq!(r.in_tested_range, None);
    assert!(
        r.problem.as_deref().unwrap().contains("printed no version"),
        "{:?}",
        r.problem
    );
    assert_eq!(r.status, Status::VersionUnknown);
    assert_eq!(
        r.fix.as_deref(),
        Some("reinstall it: npm i -g @example/fake-cli@2.1.332")
    );
}

#[tokio::test]
async fn empty_output_and_failure_exit() {
    let sb = Sandbox::new();
    let p = sb.script(&sb.bin, "fakeempty", "exit 2");
    let err = probe_version_in(&sb.env(), &p, &["--version"], T)
        .await
        .unwrap_err();
    assert!(
        matches!(&err, ProbeError::Unparseable { first_line, exit_code: Some(2), .. } if first_line.is_empty()),
        "{err:?}"
    );
    assert!(err.to_string().contains("exit code 2"), "{err}");
}

#[tokio::test]
async fn flood_is_capped() {
    let sb = Sandbox::new();
    // 5 MB on stdout after the version line: read and dropped, memory stays bounded.
    let p = sb.script(
        &sb.bin,
        "fakeflood",
        "echo 2.1.199; head -c 5000000 /dev/zero | tr '\\0' x",
    );
    let out = probe_version_in(&sb.env(), &p, &["--version"], T)
        .await
        .unwrap();
    assert_eq!(out.version, Version::new(2, 1, 199));
}

#[tokio::test]
async fn only_the_version_argument_is_passed() {
    let sb = Sandbox::new();
    let args_file = sb.root.join("args");
    let p = sb.script(
        &sb.bin,
        "fakeargs",
        &format!("echo \"$@\" > '{}'; echo 2.1.197", args_file.display()),
    );
    probe_version_in(&sb.env(), &p, &["--version"], T)
        .await
        .unwrap();
    assert_eq!(std::fs::read_to_string(&args_file).unwrap(), "--version\n");
}

/// Kimi without arguments downloads an installer: an empty argument list is refused and the
/// binary is never started.
#[tokio::test]
async fn empty_version_args_are_refused_without_running() {
    let sb = Sandbox::new();
    let marker = sb.root.join("ran");
    sb.script(
        &sb.bin,
        "fakekimi",
        &format!("touch '{}'; echo 1.51.0", marker.display()),
    );
    let s = ProbeSpec {
        version_args: &[],
        ..spec("fakekimi")
    };
    let r = probe(&s, &sb.env(), T).await;
    assert!(r.installed);
    assert_eq!(r.version, None);
    assert!(r.problem.unwrap().contains("without a version argument"));
    assert!(!marker.exists(), "the binary was run");
}

#[tokio::test]
async fn slow_cli_within_deadline() {
    let sb = Sandbox::new();
    sb.script(&sb.bin, "fakeslow", "sleep 1; echo 2.1.198");
    let r = probe(&spec("fakeslow"), &sb.env(), T).await;
    assert_eq!(r.version, Some(Version::new(2, 1, 198)));
    assert!(r.elapsed_ms >= 1000, "{}", r.elapsed_ms);
    assert_eq!(r.problem, None);
}

#[tokio::test]
async fn hanging_cli_times_out_and_its_whole_group_is_killed() {
    let sb = Sandbox::new();
    let pids = sb.root.join("pids");
    let p = sb.script(
        &sb.bin,
        "fakehang",
        &format!(
            "echo $$ > '{f}'; sleep 300 & echo $! >> '{f}'; wait",
            f = pids.display()
        ),
    );
    let deadline = Duration::from_millis(700);
    let started = Instant::now();
    let err = probe_version_in(&sb.env(), &p, &["--version"], deadline)
        .await
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(&err, ProbeError::Timeout { command, after } if command == "fakehang --version" && *after == deadline),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "`fakehang --version` timed out after 700ms"
    );
    wait_dead(&read_pids(&pids, 2));

    // And through the report.
    std::fs::remove_file(&pids).unwrap();
    let r = probe(&spec("fakehang"), &sb.env(), Duration::from_secs(1)).await;
    assert!(r.installed);
    assert_eq!(
        r.problem.as_deref(),
        Some("`fakehang --version` timed out after 1s")
    );
    assert_eq!(r.status, Status::TimedOut);
    let fix = r.fix.unwrap();
    assert!(
        fix.starts_with(&format!("check that `{} --version` finishes", p.display())),
        "{fix}"
    );
    wait_dead(&read_pids(&pids, 2));
}

/// The leader exits at once but a background child keeps stdout open: the probe must not wait
/// for it forever, keeps the version, and kills the straggler.
#[tokio::test]
async fn straggler_holding_stdout_is_killed_and_version_kept() {
    let sb = Sandbox::new();
    let pids = sb.root.join("pids");
    sb.script(
        &sb.bin,
        "fakestraggler",
        &format!(
            "echo 2.1.197; sleep 300 & echo $! > '{}'; exit 0",
            pids.display()
        ),
    );
    let r = probe(
        &spec("fakestraggler"),
        &sb.env(),
        Duration::from_millis(700),
    )
    .await;
    assert_eq!(r.version, Some(Version::new(2, 1, 197)));
    assert_eq!(r.problem, None);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    assert!(
        r.warnings[0].contains("did not finish within 700ms"),
        "{:?}",
        r.warnings
    );
    wait_dead(&read_pids(&pids, 1));
}

#[tokio::test]
async fn process_left_behind_after_normal_exit_is_swept() {
    let sb = Sandbox::new();
    let pids = sb.root.join("pids");
    // Detaches its stdio, so the probe finishes normally; the sweep must still kill it.
    sb.script(
        &sb.bin,
        "fakedaemon",
        &format!(
            "sleep 300 </dev/null >/dev/null 2>&1 & echo $! > '{}'; echo 2.1.197",
            pids.display()
        ),
    );
    let r = probe(&spec("fakedaemon"), &sb.env(), T).await;
    assert_eq!(r.version, Some(Version::new(2, 1, 197)));
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
    wait_dead(&read_pids(&pids, 1));
}

// ---- secrets and auth hints ----------------------------------------------------------------

#[tokio::test]
async fn secrets_never_reach_the_child_or_the_report() {
    let sb = Sandbox::new();
    let seen = sb.root.join("seen-env");
    // 1: dumps its env and echoes the key var (which must be absent).
    sb.script(
        &sb.bin,
        "fakesecret1",
        &format!(
            "env > '{}'; echo \"2.1.197 key=$ANTHROPIC_API_KEY tok=$FAKE_TOKEN\"",
            seen.display()
        ),
    );
    // 2: prints the secret it found elsewhere (its own config, say): redacted.
    sb.script(
        &sb.bin,
        "fakesecret2",
        "echo '2.1.197 using key sk-canary-123'",
    );
    // 3: garbage that contains the secret: redacted in the problem too.
    sb.script(
        &sb.bin,
        "fakesecret3",
        "echo 'error: bad key sk-canary-123'",
    );
    std::fs::create_dir_all(sb.home.join(".fake")).unwrap();
    std::fs::write(
        sb.home.join(".fake/credentials.json"),
        "{\"key\":\"sk-canary-123\"}",
    )
    .unwrap();

    let env = sb
        .env()
        .with_var("ANTHROPIC_API_KEY", "sk-canary-123")
        .with_var("FAKE_TOKEN", "tok-canary-456")
        .with_var("NODE_OPTIONS", "--require /evil.js")
        .with_var("npm_config_loglevel", "silly")
        .with_var("KEEP_ME", "visible");
    let auth: &'static [AuthSource] = &[
        AuthSource::Env("ANTHROPIC_API_KEY"),
        AuthSource::Env("FAKE_OTHER_KEY"),
        AuthSource::File(".fake/credentials.json"),
        AuthSource::File("~/.fake/absent.json"),
    ];
    let specs: Vec<ProbeSpec> = ["fakesecret1", "fakesecret2", "fakesecret3"]
        .into_iter()
        .map(|id| ProbeSpec { auth, ..spec(id) })
        .collect();
    let reports = probe_all(&specs, &env, T).await;
    let json = serde_json::to_string(&reports).unwrap();
    for canary in ["sk-canary-123", "tok-canary-456"] {
        assert!(!json.contains(canary), "{canary} leaked: {json}");
    }
    assert!(!format!("{env:?}").contains("sk-canary-123"));
    assert!(!format!("{reports:?}").contains("sk-canary-123"));

    let child_env = std::fs::read_to_string(&seen).unwrap();
    for absent in [
        "ANTHROPIC_API_KEY",
        "FAKE_TOKEN",
        "NODE_OPTIONS",
        "npm_config_loglevel",
    ] {
        assert!(!child_env.contains(absent), "{absent} passed to the child");
    }
    assert!(child_env.contains("KEEP_ME=visible"));
    assert!(child_env.contains("NO_COLOR=1"));

    assert_eq!(
        reports[0].version_line.as_deref(),
        Some("2.1.197 key= tok=")
    );
    assert_eq!(
        reports[1].version_line.as_deref(),
        Some("2.1.197 using key ***")
    );
    assert!(
        reports[2]
            .problem
            .as_deref()
            .unwrap()
            .contains("bad key ***")
    );

    let hints: Vec<(&str, AuthKind, bool)> = reports[0]
        .auth
        .iter()
        .map(|h| (h.name.as_str(), h.kind, h.present))
        .collect();
    assert_eq!(
        hints,
        [
            ("ANTHROPIC_API_KEY", AuthKind::Env, true),
            ("FAKE_OTHER_KEY", AuthKind::Env, false),
            ("~/.fake/credentials.json", AuthKind::File, true),
            ("~/.fake/absent.json", AuthKind::File, false),
        ]
    );
    assert_eq!(reports[0].auth_present(), Some(true));
    assert!(
        !reports[0]
            .warnings
            .iter()
            .any(|w| w.contains("credentials")),
        "{:?}",
        reports[0].warnings
    );
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v[0]["auth"][0],
        serde_json::json!({"name": "ANTHROPIC_API_KEY", "kind": "env", "present": true})
    );
}

// ---- parallelism and cache -----------------------------------------------------------------

/// Each fake CLI waits (up to 5 s) until all three have started. Run one after another, the
/// first would give up and print no version; run in parallel, all three answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probe_all_runs_concurrently_and_keeps_order() {
    let sb = Sandbox::new();
    let barrier = sb.root.join("barrier");
    std::fs::create_dir_all(&barrier).unwrap();
    let names = ["fakepar0", "fakepar1", "fakepar2"];
    for (i, n) in names.iter().enumerate() {
        sb.script(
            &sb.bin,
            n,
            &format!(
                "touch \"$BARRIER/{n}\"; i=0; while [ $(ls \"$BARRIER\" | wc -l) -lt 3 ]; do \
                 i=$((i+1)); [ $i -gt 100 ] && {{ echo gave up; exit 1; }}; sleep 0.05; done; \
                 echo 2.1.19{i}"
            ),
        );
    }
    let specs: Vec<ProbeSpec> = names.iter().map(|n| spec(n)).collect();
    let env = sb.env().with_var("BARRIER", &barrier);
    let reports = probe_all(&specs, &env, Duration::from_secs(20)).await;
    let got: Vec<(&str, Option<Version>)> = reports
        .iter()
        .map(|r| (r.provider.as_str(), r.version))
        .collect();
    assert_eq!(
        got,
        [
            ("fakepar0", Some(Version::new(2, 1, 190))),
            ("fakepar1", Some(Version::new(2, 1, 191))),
            ("fakepar2", Some(Version::new(2, 1, 192))),
        ],
        "{reports:#?}"
    );
}

/// One hanging provider does not hold up the others beyond its own deadline.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_provider_has_its_own_deadline() {
    let sb = Sandbox::new();
    sb.script(&sb.bin, "fakeok", "echo 2.1.197");
    sb.script(&sb.bin, "fakestuck", "exec sleep 300");
    let reports = probe_all(
        &[spec("fakestuck"), spec("fakeok")],
        &sb.env(),
        Duration::from_millis(500),
    )
    .await;
    assert!(reports[0].problem.as_deref().unwrap().contains("timed out"));
    assert_eq!(reports[1].version, Some(Version::new(2, 1, 197)));
    assert_eq!(reports[1].problem, None);
}

#[tokio::test]
async fn cache_skips_rerun_until_the_binary_changes_and_persists() {
    let sb = Sandbox::new();
    let count = sb.root.join("count");
    let body = format!("echo run >> '{}'; echo 2.1.230", count.display());
    let p = sb.script(&sb.bin, "fakecache", &body);
    let runs = || {
        std::fs::read_to_string(&count)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };
    let cache_dir = sb.root.join("cache");
    let cache = Arc::new(VersionCache::with_dir(&cache_dir));
    let prober = Prober::new(sb.env()).timeout(T).cache(cache.clone());
    let s = spec("fakecache");

    let first = prober.probe(&s).await;
    assert!(!first.cached);
    assert_eq!(runs(), 1);
    let second = prober.probe(&s).await;
    assert!(second.cached);
    assert_eq!(second.version, first.version);
    assert_eq!(second.version_line, first.version_line);
    assert_eq!(runs(), 1, "cached probe ran the binary");

    // A new build (different size) is probed again.
    std::fs::write(&p, format!("#!/bin/sh\n# v2\n{body}\n")).unwrap();
    let third = prober.probe(&s).await;
    assert!(!third.cached);
    assert_eq!(runs(), 2);
    assert_eq!(cache.len(), 1, "stale entry kept");

    // Persisted: a fresh cache from the same dir answers without running.
    cache.save().unwrap();
    let reloaded = Arc::new(VersionCache::with_dir(&cache_dir));
    assert_eq!(reloaded.len(), 1);
    let r = Prober::new(sb.env()).cache(reloaded).probe(&s).await;
    assert!(r.cached);
    assert_eq!(r.version, Some(Version::new(2, 1, 230)));
    assert_eq!(runs(), 2);

    // A corrupt file is an empty cache, not an error.
    std::fs::write(cache_dir.join(VersionCache::FILE_NAME), "{not json").unwrap();
    assert!(VersionCache::with_dir(&cache_dir).is_empty());
}

#[tokio::test]
async fn failures_and_hangs_are_not_cached() {
    let sb = Sandbox::new();
    sb.script(&sb.bin, "fakenocache1", "echo garbage");
    sb.script(&sb.bin, "fakenocache2", "echo 2.1.197; exec sleep 300");
    let cache = Arc::new(VersionCache::in_memory());
    let prober = Prober::new(sb.env())
        .timeout(Duration::from_millis(500))
        .cache(cache.clone());
    prober.probe(&spec("fakenocache1")).await;
    let hung = prober.probe(&spec("fakenocache2")).await;
    assert_eq!(hung.version, Some(Version::new(2, 1, 197)));
    assert!(cache.is_empty());
}

// ---- login shell -----------------------------------------------------------------------------

#[tokio::test]
async fn login_shell_path_finds_what_the_gui_path_misses() {
    let sb = Sandbox::new();
    let login_bin = sb.home.join("login-only/bin");
    let p = script(&login_bin, "fakelogin", "echo 2.1.240");
    std::fs::write(
        sb.home.join(".profile"),
        "echo 'noise from .profile'\nexport PATH=\"$HOME/login-only/bin:$PATH\"\n",
    )
    .unwrap();
    let env = sb.env().with_var("SHELL", "/bin/sh");
    assert!(resolve_binary(&spec("fakelogin"), &env).is_none());

    let login = login_shell_path(&env, Duration::from_secs(10))
        .await
        .unwrap();
    let login_str = login.to_str().unwrap();
    assert!(
        login_str.starts_with(&format!("{}:", login_bin.display())),
        "{login_str}"
    );
    let r = probe(&spec("fakelogin"), &env.with_login_path(login), T).await;
    assert_eq!(r.path, Some(p));
    assert_eq!(r.source, Some(Source::LoginShell));
    assert_eq!(r.version, Some(Version::new(2, 1, 240)));
}

#[tokio::test]
async fn login_shell_that_hangs_times_out() {
    let sb = Sandbox::new();
    let shell = script(&sb.root.join("shells"), "hangsh", "exec sleep 300");
    let env = sb.env().with_var("SHELL", &shell);
    let err = login_shell_path(&env, Duration::from_millis(500))
        .await
        .unwrap_err();
    assert!(matches!(err, ProbeError::Timeout { .. }), "{err:?}");

    let err = login_shell_path(&sb.env(), T).await.unwrap_err();
    assert!(matches!(err, ProbeError::Unsupported(_)), "{err:?}");
}

// ---- JSON shape ------------------------------------------------------------------------------

#[tokio::test]
async fn report_json_shape() {
    let sb = Sandbox::new();
    let p = sb.script(&sb.bin, "fakejson", "echo 2.1.197");
    let r = probe(&spec("fakejson"), &sb.env(), T).await;
    let mut v = serde_json::to_value(&r).unwrap();
    v["elapsedMs"] = serde_json::json!(0);
    assert_eq!(
        v,
        serde_json::json!({
            "provider": "fakejson",
            "displayName": "Fake CLI",
            "installed": true,
            "path": p,
            "source": {"kind": "path"},
            "alsoFound": [],
            "version": "2.1.197",
            "versionLine": "2.1.197",
            "testedRange": {"min": "2.1.197", "max": "2.1.332"},
            "inTestedRange": true,
            "auth": [],
            "cached": false,
            "elapsedMs": 0,
            "status": "ready",
            "problem": null,
            "fix": null,
            "warnings": []
        })
    );
}

#[tokio::test]
async fn no_credentials_seen_is_a_warning_with_the_one_thing_to_do() {
    let sb = Sandbox::new();
    sb.script(&sb.bin, "fakenoauth", "echo 2.1.197");
    let auth: &'static [AuthSource] = &[
        AuthSource::Env("FAKE_API_KEY"),
        AuthSource::File(".fake/auth.json"),
    ];
    let s = ProbeSpec {
        auth,
        ..spec("fakenoauth")
    };
    let r = probe(&s, &sb.env().with_var("FAKE_API_KEY", ""), T).await;
    assert_eq!(
        r.status,
        Status::Ready,
        "missing credentials do not change the verdict"
    );
    assert_eq!(r.auth_present(), Some(false));
    let w: Vec<&String> = r
        .warnings
        .iter()
        .filter(|w| w.contains("credentials"))
        .collect();
    assert_eq!(w.len(), 1, "{:?}", r.warnings);
    assert!(
        w[0].ends_with("set FAKE_API_KEY, or sign in with `fakenoauth`"),
        "{}",
        w[0]
    );
    assert!(w[0].contains("FAKE_API_KEY, ~/.fake/auth.json"), "{}", w[0]);

    // Not installed: the one thing to do is installing; no credentials warning on top.
    let r = probe(
        &ProbeSpec {
            auth,
            ..spec("fakenoauth2")
        },
        &sb.env(),
        T,
    )
    .await;
    assert!(r.warnings.is_empty(), "{:?}", r.warnings);
}

#[test]
fn pinned_install_hints() {
    let base = spec("fakepin");
    let with = |hint: &'static str| {
        ProbeSpec {
            install_hint: hint,
            ..base
        }
        .pinned_install_hint()
    };
    assert_eq!(with("npm i -g @x/y"), "npm i -g @x/y@2.1.332");
    assert_eq!(
        with("npm install --global y"),
        "npm install --global y@2.1.332"
    );
    assert_eq!(with("bun add -g y"), "bun add -g y@2.1.332");
    assert_eq!(with("npm i -g y@1.0.0"), "npm i -g y@1.0.0");
    assert_eq!(with("npm i -g"), "npm i -g");
    assert_eq!(
        with("pipx install kimi-cli==1.51.0"),
        "pipx install kimi-cli==1.51.0"
    );
    assert_eq!(with("npm i y"), "npm i y", "not a global install");
    assert_eq!(with(""), "");
    let no_range = ProbeSpec {
        tested: None,
        install_hint: "npm i -g y",
        ..base
    };
    assert_eq!(no_range.pinned_install_hint(), "npm i -g y");
}
