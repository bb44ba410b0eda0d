//! The `channel-manager.js` shim: a plugin that can only run `node channel-manager.js <provider>
//! <command>` gets exactly what the native binary prints, and its stop button still works.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};

fn shim() -> Command {
    let mut cmd = Command::new("node");
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scripts/channel-manager.js"
    ))
    .env("BRIDGE_BIN", env!("CARGO_BIN_EXE_bridge"));
    cmd
}

fn fake_cli(dir: &std::path::Path, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join("claude");
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn run(mut cmd: Command, input: &str) -> std::process::Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("node is installed");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn the_shim_prints_exactly_what_the_binary_prints() {
    let dir = tempfile::tempdir().unwrap();
    let cli = fake_cli(
        dir.path(),
        r#"read line
printf '%s\n' '{"type":"system","subtype":"init","session_id":"s-1"}'
printf '%s\n' '{"type":"stream_event","event":{"type":"content_block_delta","delta":{"type":"text_delta","text":"Hi\nthere"}},"parent_tool_use_id":null,"session_id":"s-1"}'
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"Hi\nthere","session_id":"s-1"}'"#,
    );
    let request = r#"{"message":"hello"}"#;
    let mut via_shim = shim();
    via_shim
        .args(["claude", "send"])
        .env("CLAUDE_CODE_PATH", &cli);
    let mut direct = Command::new(env!("CARGO_BIN_EXE_bridge"));
    direct
        .args(["claude", "send"])
        .env("CLAUDE_CODE_PATH", &cli);
    let (a, b) = (run(via_shim, request), run(direct, request));
    assert_eq!(
        String::from_utf8_lossy(&a.stdout),
        String::from_utf8_lossy(&b.stdout)
    );
    assert!(String::from_utf8_lossy(&a.stdout).contains(r#"[CONTENT_DELTA] "Hi\nthere""#));
    assert_eq!(a.status.code(), Some(0));

    let mut bad = shim();
    bad.args(["nope", "send"]);
    let out = run(bad, request);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        r#"{"success":false,"error":"Invalid provider: nope"}"#
    );
}

#[test]
fn sigterm_to_the_shim_interrupts_the_turn() {
    let dir = tempfile::tempdir().unwrap();
    let cli = fake_cli(
        dir.path(),
        r#"read line
printf '%s\n' '{"type":"system","subtype":"init","session_id":"s-2"}'
exec sleep 30"#,
    );
    let mut cmd = shim();
    cmd.args(["claude", "send"])
        .env("CLAUDE_CODE_PATH", &cli)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(br#"{"message":"hi"}"#)
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let is_session = line.starts_with("[SESSION_ID]");
        seen.push(line);
        if is_session {
            break;
        }
    }
    let started = std::time::Instant::now();
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    seen.extend(lines.map(|l| l.unwrap()));
    let status = child.wait().unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(15));
    let last = seen.last().unwrap();
    assert!(last.contains(r#""error":"User interrupted""#), "{seen:?}");
    assert_eq!(status.code(), Some(130));
}

/// The plugin's own bridge directory has a `package.json` with `"type":"module"`: the shim must
/// run there (as an ES module) exactly as it runs as CommonJS, and find the `bridge` binary next
/// to itself without `BRIDGE_BIN`.
#[test]
fn the_shim_runs_as_an_es_module_and_as_commonjs() {
    let dir = tempfile::tempdir().unwrap();
    let cli = fake_cli(
        dir.path(),
        r#"read line
printf '%s\n' '{"type":"system","subtype":"init","session_id":"s-3"}'
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"ok","session_id":"s-3"}'"#,
    );
    let request = r#"{"message":"hello"}"#;
    let mut direct = Command::new(env!("CARGO_BIN_EXE_bridge"));
    direct
        .args(["claude", "send"])
        .env("CLAUDE_CODE_PATH", &cli);
    let expected = String::from_utf8_lossy(&run(direct, request).stdout).into_owned();
    assert!(expected.contains("[SESSION_ID] s-3"), "{expected}");
    for module_type in ["module", "commonjs"] {
        let plugin_dir = dir.path().join(format!("bridge-{module_type}"));
        std::fs::create_dir_all(plugin_dir.join("node_modules")).unwrap();
        std::fs::write(
            plugin_dir.join("package.json"),
            format!(r#"{{"name":"ai-bridge","type":"{module_type}"}}"#),
        )
        .unwrap();
        std::fs::copy(
            concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/channel-manager.js"),
            plugin_dir.join("channel-manager.js"),
        )
        .unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_bridge"), plugin_dir.join("bridge"))
            .unwrap();
        let mut cmd = Command::new("node");
        cmd.arg(plugin_dir.join("channel-manager.js"))
            .args(["claude", "send"])
            .env_remove("BRIDGE_BIN")
            .env("CLAUDE_CODE_PATH", &cli)
            .current_dir(&plugin_dir);
        let out = run(cmd, request);
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            expected,
            "type {module_type}; stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(out.status.code(), Some(0), "type {module_type}");
    }
}

/// `node daemon.js` (the plugin's warm path) is `bridge daemon`: `ready`, a turn tagged by its
/// id, and when the plugin kills node the way `DaemonBridge.stop()` does (`destroyForcibly`),
/// the bridge notices its parent is gone and leaves no process behind.
#[test]
fn the_daemon_shim_serves_turns_and_dies_with_its_parent() {
    let dir = tempfile::tempdir().unwrap();
    let cli = fake_cli(
        dir.path(),
        r#"read line
printf '%s\n' '{"type":"system","subtype":"init","session_id":"s-9"}'
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"warm","session_id":"s-9"}'
exec sleep 60"#,
    );
    let plugin_dir = dir.path().join("ai-bridge");
    std::fs::create_dir_all(plugin_dir.join("node_modules")).unwrap();
    std::fs::write(
        plugin_dir.join("package.json"),
        r#"{"name":"ai-bridge","type":"module"}"#,
    )
    .unwrap();
    for file in ["channel-manager.js", "daemon.js"] {
        std::fs::copy(
            format!("{}/scripts/{file}", env!("CARGO_MANIFEST_DIR")),
            plugin_dir.join(file),
        )
        .unwrap();
    }
    let mut cmd = Command::new("node");
    cmd.arg(plugin_dir.join("daemon.js"))
        .current_dir(&plugin_dir)
        .env("BRIDGE_BIN", env!("CARGO_BIN_EXE_bridge"))
        .env("CLAUDE_CODE_PATH", &cli)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut node = cmd.spawn().unwrap();
    let mut stdin = node.stdin.take().unwrap();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let mut next = || -> serde_json::Value {
        serde_json::from_str(&lines.next().expect("a line").unwrap()).unwrap()
    };
    assert_eq!(next()["event"], "starting");
    assert_eq!(next()["event"], "ready");
    writeln!(
        stdin,
        r#"{{"id":"1","method":"claude.send","params":{{"message":"hi"}}}}"#
    )
    .unwrap();
    let mut got = Vec::new();
    let done = loop {
        let line = next();
        if line["done"] == true {
            break line;
        }
        got.push(line);
    };
    assert_eq!(done["id"], "1");
    assert_eq!(done["success"], true, "{got:?}");
    assert!(
        got.iter().any(|l| l["id"] == "1"
            && l["line"] == r#"{"success":true,"sessionId":"s-9","result":"warm"}"#),
        "{got:?}"
    );
    let bridge = common::children_of(node.id());
    assert_eq!(bridge.len(), 1, "node runs one bridge: {bridge:?}");
    let warm = common::children_of(bridge[0] as u32);
    assert_eq!(warm.len(), 1, "the session keeps its CLI: {warm:?}");
    node.kill().unwrap();
    node.wait().unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while common::group_alive(warm[0])
        || std::path::Path::new(&format!("/proc/{}", bridge[0])).exists()
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the bridge daemon or its CLI outlived node"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// `node daemon.js` prints exactly what `bridge daemon` prints for the same requests (but for
/// the pids in its lifecycle lines), and SIGTERM to node reaches the bridge (exit 130).
#[test]
fn the_daemon_shim_is_byte_identical_and_forwards_signals() {
    let dir = tempfile::tempdir().unwrap();
    let cli = fake_cli(
        dir.path(),
        r#"read line
printf '%s\n' '{"type":"system","subtype":"init","session_id":"s-4"}'
printf '%s\n' '{"type":"result","subtype":"success","is_error":false,"result":"same","session_id":"s-4"}'"#,
    );
    let input = concat!(
        r#"{"id":"1","method":"claude.send","params":{"message":"hi"}}"#,
        "\n",
        r#"{"id":"2","method":"nope.send","params":{"message":"hi"}}"#,
        "\n",
        "not json\n",
    );
    let pids = regex::Regex::new(r#""pid":\d+"#).unwrap();
    let mut via_shim = Command::new("node");
    via_shim
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/daemon.js"))
        .env("BRIDGE_BIN", env!("CARGO_BIN_EXE_bridge"))
        .env("CLAUDE_CODE_PATH", &cli);
    let mut direct = Command::new(env!("CARGO_BIN_EXE_bridge"));
    direct.arg("daemon").env("CLAUDE_CODE_PATH", &cli);
    let (a, b) = (run(via_shim, input), run(direct, input));
    // Requests run concurrently, and a per-process command's stdout and stderr are two pipes:
    // what each request got on each stream, in order, must be identical (the plugin
    // demultiplexes by id), and so must the lifecycle lines.
    let by_id = |stdout: &[u8]| {
        let text = pids
            .replace_all(&String::from_utf8_lossy(stdout), r#""pid":0"#)
            .into_owned();
        let mut lines: std::collections::BTreeMap<(String, bool), Vec<String>> = Default::default();
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let key = (value["id"].to_string(), value.get("stderr").is_some());
            lines.entry(key).or_default().push(line.to_string());
        }
        (text, lines)
    };
    let ((a, a_lines), (_, b_lines)) = (by_id(&a.stdout), by_id(&b.stdout));
    assert_eq!(a_lines, b_lines);
    assert!(
        a.contains(r#"{"id":"1","done":true,"success":true}"#),
        "{a}"
    );
    assert!(a.contains(r#""error":"Invalid provider: nope""#), "{a}");
    assert!(a.contains(r#""reason":"stdin_closed""#), "{a}");

    let mut cmd = Command::new("node");
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/daemon.js"))
        .env("BRIDGE_BIN", env!("CARGO_BIN_EXE_bridge"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped());
    let mut node = cmd.spawn().unwrap();
    let _stdin = node.stdin.take();
    let mut lines = BufReader::new(node.stdout.take().unwrap()).lines();
    let ready = lines
        .by_ref()
        .map(|l| l.unwrap())
        .find(|l| l.contains(r#""event":"ready""#));
    assert!(ready.is_some());
    // SAFETY: signalling our own child.
    unsafe {
        libc::kill(node.id() as i32, libc::SIGTERM);
    }
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(
        rest.iter().any(|l| l.contains(r#""reason":"signal""#)),
        "{rest:?}"
    );
    assert_eq!(node.wait().unwrap().code(), Some(130));
}
