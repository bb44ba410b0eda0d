//! `bridge system …` through the real binary: fake CLIs (small shell scripts) in temporary PATH
//! dirs and a fake HOME, plus the real pinned Claude Code CLI that `tests/install-clis.sh` puts
//! on PATH.
//!
//! Every fake-CLI test runs the binary with a cleared environment: PATH = the sandbox's `bin`
//! dir plus a `tools` dir holding links to a few coreutils, HOME = a sandbox dir, the cache in
//! the sandbox, no `SHELL` (so no login shell unless a test sets one) and no system dirs
//! (`BRIDGE_PROBE_SYSTEM_DIRS=`), so whatever is installed on the machine cannot interfere.
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{Value, json};
use tempfile::TempDir;

const CANARY_ANTHROPIC: &str = "sk-ant-canary-5b1e0c9d7a";
const CANARY_OPENAI: &str = "sk-proj-canary-3f8a2d6c1e";
const CANARY_TOKEN: &str = "tok-canary-codex-9e4b7a";

struct Sandbox {
    _tmp: TempDir,
    root: PathBuf,
    home: PathBuf,
    bin: PathBuf,
    tools: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().canonicalize().unwrap();
        let (home, bin, tools) = (root.join("home"), root.join("bin"), root.join("tools"));
        for d in [&home, &bin, &tools] {
            std::fs::create_dir_all(d).unwrap();
        }
        for tool in [
            "sh", "sleep", "cat", "echo", "printf", "touch", "ls", "wc", "head", "tr", "env",
        ] {
            let real = which::which(tool).unwrap_or_else(|_| panic!("`{tool}` not on PATH"));
            std::os::unix::fs::symlink(real, tools.join(tool)).unwrap();
        }
        Sandbox {
            _tmp: tmp,
            root,
            home,
            bin,
            tools,
        }
    }

    /// A `#!/bin/sh` script `dir/name` with `body`.
    fn script(&self, dir: &Path, name: &str, body: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join(name);
        let tmp = dir.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755)).unwrap();
        std::fs::rename(&tmp, &p).unwrap();
        p
    }

    /// A fake CLI on PATH.
    fn cli(&self, name: &str, body: &str) -> PathBuf {
        self.script(&self.bin, name, body)
    }

    fn cache_file(&self) -> PathBuf {
        self.root.join("cache/bridge/sdk-probe-versions.json")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_bridge"));
        cmd.env_clear()
            .args(args)
            .current_dir(&self.root)
            .env(
                "PATH",
                format!("{}:{}", self.bin.display(), self.tools.display()),
            )
            .env("HOME", &self.home)
            .env("XDG_CACHE_HOME", self.root.join("cache"))
            .env("BRIDGE_PROBE_SYSTEM_DIRS", "")
            // These tests fake the Claude and Codex CLIs; the other providers have their own.
            .env("BRIDGE_PROVIDERS", "claude,codex")
            .env("LANG", "C.UTF-8");
        cmd
    }
}

struct Run {
    stdout: String,
    stderr: String,
    code: Option<i32>,
    elapsed: Duration,
}

impl Run {
    fn json(&self) -> Value {
        assert_eq!(
            self.stdout.lines().count(),
            1,
            "stdout must be exactly one JSON line:\n{}",
            self.stdout
        );
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }

    /// The table row of a provider, as columns split on runs of 2+ spaces.
    fn row(&self, provider: &str) -> Vec<String> {
        let line = self
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(provider))
            .unwrap_or_else(|| panic!("no row for {provider}:\n{}", self.stdout));
        Regex::new(r"\s{2,}")
            .unwrap()
            .split(line)
            .map(str::to_owned)
            .collect()
    }
}

fn run(mut cmd: Command) -> Run {
    let started = Instant::now();
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("run bridge");
    let run = Run {
        stdout: String::from_utf8(stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
        code: status.code(),
        elapsed: started.elapsed(),
    };
    for canary in [CANARY_ANTHROPIC, CANARY_OPENAI, CANARY_TOKEN] {
        assert!(
            !run.stdout.contains(canary) && !run.stderr.contains(canary),
            "a secret leaked:\nstdout:\n{}\nstderr:\n{}",
            run.stdout,
            run.stderr
        );
    }
    for line in run.stdout.lines().chain(run.stderr.lines()) {
        assert!(
            !line.starts_with("[DIAG-") && !line.starts_with("[sdk-loader]"),
            "a line a plugin would parse as a marker: {line}"
        );
    }
    run
}

fn status_json(sb: &Sandbox, env: &[(&str, &str)]) -> (Run, Value) {
    let mut cmd = sb.command(&["system", "status", "--json"]);
    cmd.envs(env.iter().copied());
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    let v = r.json();
    assert_eq!(v["v"], 1);
    (r, v)
}

fn status_table(sb: &Sandbox, env: &[(&str, &str)]) -> Run {
    let mut cmd = sb.command(&["system", "status"]);
    cmd.envs(env.iter().copied());
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "stderr: {}", r.stderr);
    r
}

fn provider<'a>(doc: &'a Value, id: &str) -> &'a Value {
    doc["providers"]
        .as_array()
        .expect("providers array")
        .iter()
        .find(|p| p["provider"] == id)
        .unwrap_or_else(|| panic!("no {id} in {doc:#}"))
}

fn alive(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|s| s.split_whitespace().next())
            .is_some_and(|state| state != "Z"),
        Err(_) => false,
    }
}

// ---- versions, ranges, table and JSON ----------------------------------------------------------

#[test]
fn in_range_and_out_of_range_versions_in_json_and_table() {
    let sb = Sandbox::new();
    let claude = sb.cli("claude", "echo '2.1.200 (Claude Code)'");
    let codex = sb.cli("codex", "echo 'codex-cli 0.168.0'");

    let (_, doc) = status_json(&sb, &[]);
    let c = provider(&doc, "claude");
    assert_eq!(c["installed"], true);
    assert_eq!(c["path"], json!(claude));
    assert_eq!(c["source"], json!({"kind": "path"}));
    assert_eq!(c["version"], "2.1.200");
    assert_eq!(c["versionLine"], "2.1.200 (Claude Code)");
    assert_eq!(
        c["testedRange"],
        json!({"min": "2.1.197", "max": "2.1.332"})
    );
    assert_eq!(c["inTestedRange"], true);
    assert_eq!(c["status"], "ready");
    assert_eq!(c["problem"], Value::Null);
    assert_eq!(c["fix"], Value::Null);

    let x = provider(&doc, "codex");
    assert_eq!(x["path"], json!(codex));
    assert_eq!(x["version"], "0.168.0");
    assert_eq!(x["inTestedRange"], false);
    assert_eq!(x["status"], "untested");
    assert_eq!(
        x["problem"],
        "version 0.168.0 is outside the tested range 0.169.1–0.171.0"
    );
    assert_eq!(
        x["fix"],
        "upgrade to a tested version (0.169.1–0.171.0): npm i -g @openai/codex@0.171.0"
    );
    assert_eq!(doc["ready"], false);
    assert_eq!(doc["timeoutMs"], 10_000);
    assert_eq!(doc["loginShell"]["status"], "notNeeded");

    // A newer version than tested: downgrade.
    sb.cli("codex", "echo 'codex-cli 0.180.2'");
    let (_, doc) = status_json(&sb, &[]);
    assert_eq!(
        provider(&doc, "codex")["fix"],
        "downgrade to a tested version (0.169.1–0.171.0): npm i -g @openai/codex@0.171.0"
    );

    let t = status_table(&sb, &[]);
    assert_eq!(
        t.row("claude"),
        [
            "claude",
            "yes",
            "2.1.200*",
            "yes",
            "2.1.197–2.1.332",
            &format!("{} (PATH)", claude.display())
        ],
        "{}",
        t.stdout
    );
    assert_eq!(
        t.row("codex"),
        [
            "codex",
            "yes",
            "0.180.2*",
            "NO",
            "0.169.1–0.171.0",
            &format!("{} (PATH)", codex.display())
        ],
        "{}",
        t.stdout
    );
    assert!(
        t.stdout.contains(
            "codex   version 0.180.2 is outside the tested range 0.169.1–0.171.0\n          -> downgrade to a tested version (0.169.1–0.171.0): npm i -g @openai/codex@0.171.0\n"
        ),
        "{}",
        t.stdout
    );
    assert!(
        t.stdout
            .contains("Ready: claude. Not ready: codex (untested version)."),
        "{}",
        t.stdout
    );
}

#[test]
fn a_missing_provider_is_reported_with_its_install_command_and_exit_is_zero() {
    let sb = Sandbox::new();
    sb.cli("claude", "echo '2.1.197 (Claude Code)'");
    let (_, doc) = status_json(&sb, &[]);
    let x = provider(&doc, "codex");
    assert_eq!(x["installed"], false);
    assert_eq!(x["path"], Value::Null);
    assert_eq!(x["version"], Value::Null);
    assert_eq!(x["inTestedRange"], Value::Null);
    assert_eq!(x["status"], "notInstalled");
    assert_eq!(
        x["fix"],
        "install it: npm i -g @openai/codex@0.171.0 (or set CODEX_PATH to an existing `codex`)"
    );
    // No SHELL in this environment: the login shell was needed (codex is missing) but unavailable.
    assert_eq!(doc["loginShell"]["status"], "unavailable");
    assert_eq!(doc["loginShell"]["detail"], "SHELL is not set");
    assert_eq!(provider(&doc, "claude")["status"], "ready");

    let t = status_table(&sb, &[]);
    assert_eq!(
        t.row("codex"),
        ["codex", "NO", "-", "-", "0.169.1–0.171.0", "-"]
    );
    assert!(
        t.stdout.contains(
            "codex   not installed (not on PATH nor in the usual install dirs)\n          -> install it: npm i -g @openai/codex@0.171.0 (or set CODEX_PATH to an existing `codex`)\n"
        ),
        "{}",
        t.stdout
    );
    assert!(
        t.stdout
            .contains("Login-shell PATH: unavailable (SHELL is not set)"),
        "{}",
        t.stdout
    );
}

/// The table as a user sees it (sandbox paths and the timing replaced).
#[test]
fn table_snapshot() {
    let sb = Sandbox::new();
    sb.cli("claude", "echo '2.1.197 (Claude Code)'");
    std::fs::create_dir_all(sb.home.join(".claude")).unwrap();
    std::fs::write(sb.home.join(".claude/.credentials.json"), "{}").unwrap();
    let t = status_table(&sb, &[("OPENAI_API_KEY", CANARY_OPENAI)]);
    let text = t
        .stdout
        .replace(&sb.root.display().to_string(), "[sandbox]");
    let text = Regex::new(r"in parallel in \d+\.\d\ds")
        .unwrap()
        .replace(&text, "in parallel in [t]s");
    insta::assert_snapshot!("status_table", text);
}

// ---- where the binary was found ----------------------------------------------------------------

#[test]
fn install_dirs_outside_path_under_a_fake_home() {
    let sb = Sandbox::new();
    // codex in ~/.local/bin (the native-installer / pipx dir a GUI PATH usually lacks);
    // claude in its own install dir ~/.claude/local.
    let codex = sb.script(
        &sb.home.join(".local/bin"),
        "codex",
        "echo 'codex-cli 0.171.0'",
    );
    let claude = sb.script(
        &sb.home.join(".claude/local"),
        "claude",
        "echo '2.1.197 (Claude Code)'",
    );
    let (_, doc) = status_json(&sb, &[]);
    let x = provider(&doc, "codex");
    assert_eq!(x["path"], json!(codex));
    assert_eq!(
        x["source"],
        json!({"kind": "installDir", "dir": sb.home.join(".local/bin"), "via": "user-local"})
    );
    assert_eq!(x["version"], "0.171.0");
    assert_eq!(x["status"], "ready");
    let c = provider(&doc, "claude");
    assert_eq!(c["path"], json!(claude));
    assert_eq!(
        c["source"],
        json!({"kind": "installDir", "dir": sb.home.join(".claude/local"), "via": "provider"})
    );
    assert_eq!(doc["ready"], true);

    let t = status_table(&sb, &[]);
    assert_eq!(
        t.row("codex")[5],
        format!("{} (install dir, user-local)", codex.display())
    );
    assert_eq!(
        t.row("claude")[5],
        format!("{} (install dir, provider)", claude.display())
    );
    assert!(
        t.stdout
            .contains("To do: nothing, every provider is ready."),
        "{}",
        t.stdout
    );
}

#[test]
fn env_overrides_win_and_a_broken_one_is_reported() {
    let sb = Sandbox::new();
    let shadowed = sb.cli("codex", "echo 'codex-cli 0.1.0'");
    let custom = sb.script(
        &sb.root.join("opt"),
        "codex-custom",
        "echo 'codex-cli 0.171.0'",
    );
    let claude_dir = sb.root.join("claude-dir");
    let claude = sb.script(&claude_dir, "claude", "echo '2.1.300 (Claude Code)'");
    let missing = sb.root.join("nowhere/claude");
    let env = [
        ("CODEX_PATH", custom.to_str().unwrap()),
        // The first Claude override points nowhere; the second names a directory.
        ("CLAUDE_CODE_PATH", missing.to_str().unwrap()),
        ("CLAUDE_BIN", claude_dir.to_str().unwrap()),
    ];
    let (_, doc) = status_json(&sb, &env);
    let x = provider(&doc, "codex");
    assert_eq!(x["path"], json!(custom));
    assert_eq!(x["source"], json!({"kind": "env", "var": "CODEX_PATH"}));
    assert_eq!(x["version"], "0.171.0");
    assert_eq!(x["alsoFound"], json!([shadowed]));
    let c = provider(&doc, "claude");
    assert_eq!(c["path"], json!(claude));
    assert_eq!(c["source"], json!({"kind": "env", "var": "CLAUDE_BIN"}));
    assert_eq!(c["version"], "2.1.300");
    let warnings = c["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "CLAUDE_CODE_PATH is set to {}, which is not an executable file; ignored",
            missing.display()
        )),
        "{warnings}"
    );

    let t = status_table(&sb, &env);
    assert_eq!(
        t.row("codex")[5],
        format!("{} (env CODEX_PATH)", custom.display())
    );
    assert!(
        t.stdout.contains(&format!(
            "codex   also installed (not used): {}",
            shadowed.display()
        )),
        "{}",
        t.stdout
    );
    assert!(
        t.stdout.contains("CLAUDE_CODE_PATH is set to"),
        "{}",
        t.stdout
    );
}

#[test]
fn the_login_shell_path_is_consulted_when_needed_and_reported_as_such() {
    let sb = Sandbox::new();
    sb.cli("claude", "echo '2.1.197 (Claude Code)'");
    let login_bin = sb.root.join("login-only/bin");
    let codex = sb.script(&login_bin, "codex", "echo 'codex-cli 0.171.0'");
    let ran = sb.root.join("login-shell-ran");
    // A login shell whose profile adds `login_bin` to PATH (called as `$SHELL -l -c SCRIPT`).
    let shell = sb.script(
        &sb.root.join("shells"),
        "fakesh",
        &format!(
            "touch '{}'\nPATH='{}':\"$PATH\"; export PATH\nshift 2\nexec /bin/sh -c \"$1\"",
            ran.display(),
            login_bin.display()
        ),
    );
    let shell_s = shell.to_str().unwrap();

    let (_, doc) = status_json(&sb, &[("SHELL", shell_s)]);
    let x = provider(&doc, "codex");
    assert_eq!(x["path"], json!(codex));
    assert_eq!(x["source"], json!({"kind": "loginShell"}));
    assert_eq!(x["status"], "ready");
    assert_eq!(doc["loginShell"]["status"], "ok");
    assert_eq!(doc["loginShell"]["shell"], json!(shell));
    assert_eq!(doc["loginShell"]["addedDirs"], json!([login_bin]));

    let t = status_table(&sb, &[("SHELL", shell_s)]);
    assert_eq!(
        t.row("codex")[5],
        format!("{} (login-shell PATH)", codex.display())
    );
    assert!(
        t.stdout.contains(&format!(
            "Login-shell PATH: {shell_s} -l adds {}",
            login_bin.display()
        )),
        "{}",
        t.stdout
    );

    // Disabled: codex is then not found.
    let (_, doc) = status_json(&sb, &[("SHELL", shell_s), ("BRIDGE_LOGIN_SHELL", "0")]);
    assert_eq!(provider(&doc, "codex")["installed"], false);
    assert_eq!(doc["loginShell"]["status"], "disabled");

    // Not needed when everything is on PATH: the shell does not even run.
    std::fs::remove_file(&ran).unwrap();
    sb.cli("codex", "echo 'codex-cli 0.171.0'");
    let (_, doc) = status_json(&sb, &[("SHELL", shell_s)]);
    assert_eq!(doc["loginShell"]["status"], "notNeeded");
    assert!(
        !ran.exists(),
        "the login shell ran although it was not needed"
    );

    // A login shell that hangs is cut off at its deadline.
    std::fs::remove_file(sb.bin.join("codex")).unwrap();
    let hang = sb.script(&sb.root.join("shells"), "hangsh", "exec sleep 300");
    let (r, doc) = status_json(
        &sb,
        &[
            ("SHELL", hang.to_str().unwrap()),
            ("BRIDGE_PROBE_TIMEOUT", "1"),
        ],
    );
    assert_eq!(doc["loginShell"]["status"], "timedOut");
    assert!(r.elapsed < Duration::from_secs(20), "{:?}", r.elapsed);
}

// ---- timeouts, slow and broken CLIs --------------------------------------------------------------

#[test]
fn slow_and_hanging_clis_each_get_their_own_deadline() {
    let sb = Sandbox::new();
    let pids = sb.root.join("pids");
    sb.cli("claude", "sleep 0.5; echo '2.1.197 (Claude Code)'");
    let codex = sb.cli(
        "codex",
        &format!(
            "echo $$ >> '{f}'; sleep 300 & echo $! >> '{f}'; wait",
            f = pids.display()
        ),
    );
    let env = [("BRIDGE_PROBE_TIMEOUT", "1.5")];
    let (r, doc) = status_json(&sb, &env);
    assert!(
        r.elapsed < Duration::from_secs(20),
        "the hanging CLI held the status up: {:?}",
        r.elapsed
    );
    assert_eq!(doc["timeoutMs"], 1500);
    let c = provider(&doc, "claude");
    assert_eq!(c["version"], "2.1.197");
    assert_eq!(c["status"], "ready");
    let x = provider(&doc, "codex");
    assert_eq!(x["installed"], true);
    assert_eq!(x["version"], Value::Null);
    assert_eq!(x["status"], "timedOut");
    assert_eq!(x["problem"], "`codex --version` timed out after 1.5s");
    assert_eq!(
        x["fix"],
        format!(
            "check that `{} --version` finishes (it did not within 1.5s); if it is only slow, raise BRIDGE_PROBE_TIMEOUT (seconds)",
            codex.display()
        )
    );
    // The hanging CLI and the process it started are gone.
    let list: Vec<i32> = std::fs::read_to_string(&pids)
        .unwrap()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(list.len(), 2, "{list:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    while list.iter().any(|&p| alive(p)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!list.iter().any(|&p| alive(p)), "left running: {list:?}");

    // The table says the same; the timed-out version was not cached, the slow one was.
    let t = status_table(&sb, &env);
    assert_eq!(t.row("codex")[..4], ["codex", "yes", "?", "?"]);
    assert_eq!(t.row("claude")[2], "2.1.197*");
    assert!(
        t.stdout
            .contains("codex   `codex --version` timed out after 1.5s\n          -> check that"),
        "{}",
        t.stdout
    );
    assert!(
        t.stdout.contains("Not ready: codex (--version timed out)."),
        "{}",
        t.stdout
    );
}

#[test]
fn garbage_output_is_a_version_unknown_not_a_crash() {
    let sb = Sandbox::new();
    sb.cli(
        "claude",
        r"printf '\377\376\033[31mnot a version\033[0m\n'; head -c 100000 /dev/zero | tr '\0' x; exit 3",
    );
    sb.cli("codex", "exit 0");
    let (_, doc) = status_json(&sb, &[]);
    let c = provider(&doc, "claude");
    assert_eq!(c["installed"], true);
    assert_eq!(c["status"], "versionUnknown");
    assert_eq!(c["inTestedRange"], Value::Null);
    let problem = c["problem"].as_str().unwrap();
    assert!(
        problem
            .starts_with("`claude --version` printed no version (first line: \"��not a version\""),
        "{problem}"
    );
    assert!(problem.ends_with(", exit code 3)"), "{problem}");
    assert_eq!(
        c["fix"],
        "reinstall it: npm i -g @anthropic-ai/claude-code@2.1.332"
    );
    let x = provider(&doc, "codex");
    assert_eq!(x["status"], "versionUnknown");

    let t = status_table(&sb, &[]);
    assert_eq!(t.row("claude")[..4], ["claude", "yes", "?", "?"]);
    assert!(t.stdout.len() < 10_000, "the flood reached the table");
}

/// Each fake CLI waits (up to 5 s) until both have started: probed one after the other, the
/// first would give up and print no version; probed in parallel, both answer.
#[test]
fn providers_are_probed_in_parallel() {
    let sb = Sandbox::new();
    let barrier = sb.root.join("barrier");
    std::fs::create_dir_all(&barrier).unwrap();
    for (name, version) in [("claude", "2.1.197"), ("codex", "0.171.0")] {
        sb.cli(
            name,
            &format!(
                "touch '{b}/{name}'; i=0; while [ $(ls '{b}' | wc -l) -lt 2 ]; do \
                 i=$((i+1)); [ $i -gt 100 ] && {{ echo gave up; exit 1; }}; sleep 0.05; done; \
                 echo {version}",
                b = barrier.display()
            ),
        );
    }
    let (_, doc) = status_json(&sb, &[]);
    assert_eq!(provider(&doc, "claude")["version"], "2.1.197");
    assert_eq!(provider(&doc, "codex")["version"], "0.171.0");
    assert_eq!(doc["ready"], true);
}

// ---- cache ---------------------------------------------------------------------------------------

#[test]
fn a_repeat_uses_the_cache_until_the_binary_changes() {
    let sb = Sandbox::new();
    let count = sb.root.join("count");
    let body = |v: &str| {
        format!(
            "echo run >> '{}'; echo '{v} (Claude Code)'",
            count.display()
        )
    };
    sb.cli("claude", &body("2.1.200"));
    sb.cli("codex", "echo 'codex-cli 0.171.0'");
    let runs = || {
        std::fs::read_to_string(&count)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    };

    let (_, doc) = status_json(&sb, &[]);
    assert_eq!(runs(), 1);
    assert_eq!(provider(&doc, "claude")["cached"], false);
    assert_eq!(
        doc["cache"],
        json!({"enabled": true, "file": sb.cache_file(), "hits": 0})
    );
    assert!(sb.cache_file().exists());

    let (_, doc) = status_json(&sb, &[]);
    assert_eq!(runs(), 1, "the cached repeat ran --version");
    assert_eq!(provider(&doc, "claude")["cached"], true);
    assert_eq!(provider(&doc, "claude")["version"], "2.1.200");
    assert_eq!(
        provider(&doc, "claude")["versionLine"],
        "2.1.200 (Claude Code)"
    );
    assert_eq!(doc["cache"]["hits"], 2);

    // An upgrade (new size and mtime) is probed again.
    sb.cli("claude", &format!("# upgraded\n{}", body("2.1.210")));
    let (_, doc) = status_json(&sb, &[]);
    assert_eq!(runs(), 2);
    assert_eq!(provider(&doc, "claude")["version"], "2.1.210");
    assert_eq!(provider(&doc, "claude")["cached"], false);

    // BRIDGE_NO_CACHE runs it again (and refreshes the cache).
    let (_, doc) = status_json(&sb, &[("BRIDGE_NO_CACHE", "1")]);
    assert_eq!(runs(), 3);
    assert_eq!(doc["cache"]["enabled"], false);
    assert_eq!(provider(&doc, "claude")["cached"], false);
    let (_, doc) = status_json(&sb, &[]);
    assert_eq!(runs(), 3);
    assert_eq!(provider(&doc, "claude")["cached"], true);

    // Without XDG_CACHE_HOME the cache is ~/.cache/bridge.
    let mut cmd = sb.command(&["system", "status", "--json"]);
    cmd.env_remove("XDG_CACHE_HOME");
    let doc = run(cmd).json();
    assert_eq!(
        doc["cache"]["file"],
        json!(sb.home.join(".cache/bridge/sdk-probe-versions.json"))
    );
    assert!(
        sb.home
            .join(".cache/bridge/sdk-probe-versions.json")
            .exists()
    );
}

// ---- secrets -------------------------------------------------------------------------------------

#[test]
fn secrets_in_the_environment_never_appear_in_any_output() {
    let sb = Sandbox::new();
    let seen = sb.root.join("seen-env");
    // Claude dumps the env it was given and tries to echo its key; codex prints a secret it
    // "found elsewhere" in a garbage answer.
    sb.cli(
        "claude",
        &format!(
            "env > '{}'; echo \"2.1.200 key=$ANTHROPIC_API_KEY\"",
            seen.display()
        ),
    );
    sb.cli("codex", &format!("echo 'error: bad key {CANARY_OPENAI}'"));
    let env = [
        ("ANTHROPIC_API_KEY", CANARY_ANTHROPIC),
        ("OPENAI_API_KEY", CANARY_OPENAI),
        ("CODEX_API_KEY", CANARY_TOKEN),
        ("BRIDGE_NO_CACHE", "1"),
    ];
    // `run` fails the test if a canary appears on stdout or stderr.
    let (_, doc) = status_json(&sb, &env);
    let c = provider(&doc, "claude");
    assert_eq!(c["versionLine"], "2.1.200 key=");
    assert_eq!(
        c["auth"][0],
        json!({"name": "ANTHROPIC_API_KEY", "kind": "env", "present": true})
    );
    let x = provider(&doc, "codex");
    assert_eq!(
        x["auth"],
        json!([
            {"name": "OPENAI_API_KEY", "kind": "env", "present": true},
            {"name": "CODEX_API_KEY", "kind": "env", "present": true},
            {"name": "~/.codex/auth.json", "kind": "file", "present": false},
        ])
    );
    assert!(
        x["problem"].as_str().unwrap().contains("bad key ***"),
        "{x:#}"
    );
    let child_env = std::fs::read_to_string(&seen).unwrap();
    assert!(!child_env.contains("ANTHROPIC_API_KEY"), "{child_env}");

    let t = status_table(&sb, &env);
    assert!(
        t.stdout.contains("ANTHROPIC_API_KEY (env) present"),
        "{}",
        t.stdout
    );
    for args in [
        ["system", "getSdkStatus"],
        ["system", "checkClaudeSdk"],
        ["system", "checkCodexSdk"],
    ] {
        let mut cmd = sb.command(&args);
        cmd.envs(env);
        run(cmd);
    }
    // And a secret named in an override that points nowhere is not echoed either.
    let mut cmd = sb.command(&["system", "status"]);
    cmd.envs(env).env("CODEX_PATH", format!("/{CANARY_OPENAI}"));
    run(cmd);
}

#[test]
fn no_credentials_seen_is_a_note_with_the_one_thing_to_do() {
    let sb = Sandbox::new();
    sb.cli("claude", "echo '2.1.197 (Claude Code)'");
    sb.cli("codex", "echo 'codex-cli 0.171.0'");
    std::fs::create_dir_all(sb.home.join(".codex")).unwrap();
    std::fs::write(sb.home.join(".codex/auth.json"), "{}").unwrap();
    let (_, doc) = status_json(&sb, &[]);
    let c = provider(&doc, "claude");
    assert_eq!(c["status"], "ready");
    let w = c["warnings"][0].as_str().unwrap();
    assert!(
        w.ends_with("set ANTHROPIC_API_KEY, or sign in with `claude`"),
        "{w}"
    );
    assert_eq!(provider(&doc, "codex")["warnings"], json!([]));
    assert_eq!(
        provider(&doc, "codex")["auth"][2],
        json!({"name": "~/.codex/auth.json", "kind": "file", "present": true})
    );
}

// ---- compatibility commands ----------------------------------------------------------------------

#[test]
fn compatibility_commands_have_the_exact_ai_bridge_shapes() {
    let sb = Sandbox::new();
    let ran = sb.root.join("version-ran");
    let claude = sb.cli(
        "claude",
        &format!("touch '{}'; echo '2.1.197 (Claude Code)'", ran.display()),
    );
    let compat = |args: &[&str], env: &[(&str, &str)]| {
        let mut cmd = sb.command(args);
        cmd.envs(env.iter().copied());
        let r = run(cmd);
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
        assert!(r.stdout.ends_with('\n'));
        r.stdout
    };
    // Missing codex: where npm would put it; no npm prefix nor node here, so ~/.local/bin.
    let expected_codex = sb.home.join(".local/bin/codex");
    assert_eq!(
        compat(&["system", "getSdkStatus"], &[]),
        format!(
            "{}\n",
            json!({"success": true, "data": {
                "claude": {"installed": true, "path": claude},
                "codex": {"installed": false, "path": expected_codex},
            }})
        )
    );
    assert_eq!(
        compat(&["system", "checkClaudeSdk"], &[]),
        "{\"success\":true,\"available\":true}\n"
    );
    assert_eq!(
        compat(&["system", "checkCodexSdk"], &[]),
        "{\"success\":true,\"available\":false}\n"
    );
    // `--json` changes nothing for them.
    assert_eq!(
        compat(&["system", "checkCodexSdk", "--json"], &[]),
        "{\"success\":true,\"available\":false}\n"
    );
    assert!(!ran.exists(), "a compatibility command ran --version");

    // The expected path follows npm's global prefix, or the node npm would use.
    let out = compat(
        &["system", "getSdkStatus"],
        &[("NPM_CONFIG_PREFIX", "/opt/npm")],
    );
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["data"]["codex"]["path"], "/opt/npm/bin/codex");
    let node_dir = sb.root.join("node/bin");
    sb.script(&node_dir, "node", "exit 0");
    let mut cmd = sb.command(&["system", "getSdkStatus"]);
    cmd.env(
        "PATH",
        format!(
            "{}:{}:{}",
            sb.bin.display(),
            node_dir.display(),
            sb.tools.display()
        ),
    );
    let v = run(cmd).json();
    assert_eq!(v["data"]["codex"]["path"], json!(node_dir.join("codex")));

    // Installed outside PATH (a GUI-launched IDE's case) counts as installed.
    let codex = sb.script(
        &sb.home.join(".local/bin"),
        "codex",
        "echo 'codex-cli 0.171.0'",
    );
    assert_eq!(
        compat(&["system", "checkCodexSdk"], &[]),
        "{\"success\":true,\"available\":true}\n"
    );
    let v: Value = serde_json::from_str(&compat(&["system", "getSdkStatus"], &[])).unwrap();
    assert_eq!(
        v["data"]["codex"],
        json!({"installed": true, "path": codex})
    );

    // A broken override is a diagnostic on stderr; stdout keeps its exact shape.
    let mut cmd = sb.command(&["system", "checkClaudeSdk"]);
    cmd.env("CLAUDE_CODE_PATH", "/nowhere/claude");
    let r = run(cmd);
    assert_eq!(r.stdout, "{\"success\":true,\"available\":true}\n");
    assert_eq!(
        r.stderr,
        "bridge: CLAUDE_CODE_PATH is set to /nowhere/claude, which is not an executable file; ignored\n"
    );

    // Through an env override.
    std::fs::remove_file(&claude).unwrap();
    let custom = sb.script(&sb.root.join("opt"), "my-claude", "echo 2.1.197");
    assert_eq!(
        compat(&["system", "checkClaudeSdk"], &[]),
        "{\"success\":true,\"available\":false}\n"
    );
    let v: Value = serde_json::from_str(&compat(
        &["system", "getSdkStatus"],
        &[("CLAUDE_CODE_PATH", custom.to_str().unwrap())],
    ))
    .unwrap();
    assert_eq!(
        v["data"]["claude"],
        json!({"installed": true, "path": custom})
    );
}

#[test]
fn unknown_or_missing_system_command_fails_with_exit_1() {
    let sb = Sandbox::new();
    let r = run(sb.command(&["system", "frobnicate"]));
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stdout,
        "{\"success\":false,\"error\":\"Unknown System command: frobnicate\"}\n"
    );
    assert!(
        r.stderr
            .contains("status, getSdkStatus, checkClaudeSdk, checkCodexSdk")
    );

    let r = run(sb.command(&["system"]));
    assert_eq!(r.code, Some(1));
    assert_eq!(
        r.stdout,
        "{\"success\":false,\"error\":\"No command specified\"}\n"
    );

    // A bad timeout value is reported on stderr and the default used.
    let mut cmd = sb.command(&["system", "status", "--json"]);
    cmd.env("BRIDGE_PROBE_TIMEOUT", "soon");
    let r = run(cmd);
    assert_eq!(r.code, Some(0));
    assert_eq!(r.json()["timeoutMs"], 10_000);
    assert!(
        r.stderr
            .starts_with("bridge: BRIDGE_PROBE_TIMEOUT=\"soon\""),
        "{}",
        r.stderr
    );
}

// ---- the real Claude Code CLI ------------------------------------------------------------------

/// The pinned Claude Code that `tests/install-clis.sh` installs and `scripts/test` puts on PATH.
#[test]
fn the_real_claude_cli_is_installed_pinned_and_in_range() {
    let claude = which::which("claude").unwrap_or_else(|_| {
        panic!(
            "the real `claude` CLI is not on PATH: run tests/install-clis.sh and put its bin dirs \
             on PATH (`. ~/.cache/bridge-clis/path.env; export PATH=$BRIDGE_CLI_PATH:$PATH`), \
             as scripts/test does"
        )
    });
    let sb = Sandbox::new();
    let path = std::env::var_os("PATH").unwrap_or_default();
    let real = |args: &[&str]| {
        let mut cmd = sb.command(args);
        // This test checks what is detected, not how fast: `system status` starts every
        // provider's `--version` at once, and on a 2-core CI machine that is also running other
        // tests the native `claude` binary once took more than the default 10 s to answer.
        cmd.env("PATH", &path)
            .env("ANTHROPIC_API_KEY", CANARY_ANTHROPIC)
            .env("BRIDGE_LOGIN_SHELL", "0")
            .env("BRIDGE_PROBE_TIMEOUT", "120");
        let r = run(cmd);
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
        r
    };

    let doc = real(&["system", "status", "--json"]).json();
    let c = provider(&doc, "claude");
    assert_eq!(c["installed"], true, "{c:#}");
    assert_eq!(c["path"], json!(claude), "{c:#}");
    assert_eq!(c["source"], json!({"kind": "path"}));
    assert_eq!(c["version"], "2.1.197", "{c:#}");
    assert_eq!(c["versionLine"], "2.1.197 (Claude Code)");
    assert_eq!(c["inTestedRange"], true);
    assert_eq!(c["status"], "ready");
    assert_eq!(c["cached"], false);
    assert_eq!(c["auth"][0]["present"], true);

    let t = real(&["system", "status"]);
    assert_eq!(
        t.row("claude"),
        [
            "claude",
            "yes",
            "2.1.197*",
            "yes",
            "2.1.197–2.1.332",
            &format!("{} (PATH)", claude.display())
        ],
        "{}",
        t.stdout
    );

    let v = real(&["system", "getSdkStatus"]).json();
    assert_eq!(
        v["data"]["claude"],
        json!({"installed": true, "path": claude})
    );
    assert_eq!(
        real(&["system", "checkClaudeSdk"]).stdout,
        "{\"success\":true,\"available\":true}\n"
    );
}

/// `bridge --help` names every registered provider, and each provider with more than one
/// transport is named with `--transport json` (the help text is written by hand).
#[test]
fn help_names_every_provider_and_the_multi_transport_ones() {
    let out = Command::new(env!("CARGO_BIN_EXE_bridge"))
        .arg("--help")
        .output()
        .expect("run bridge --help");
    let help = String::from_utf8_lossy(&out.stdout);
    let providers = help
        .lines()
        .find_map(|l| l.strip_prefix("Providers: "))
        .expect("a Providers line");
    let (names, transports) = providers.split_once(" (").expect("names, then a note");
    let names: Vec<&str> = names.split(", ").collect();
    let router = bridge::router();
    assert_eq!(names, router.ids());
    let named: Vec<&str> = transports
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .collect();
    assert!(transports.contains("--transport json"), "{providers}");
    for channel in router.channels() {
        let multi = channel.transports().len() > 1;
        assert_eq!(
            named.contains(&channel.id()),
            multi,
            "{}: {providers}",
            channel.id()
        );
    }
}
