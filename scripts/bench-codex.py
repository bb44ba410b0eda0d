#!/usr/bin/env python3
"""Side-by-side: the real Codex CLI against the mock, run directly vs through `bridge`.

Runs inside a loopback-only network namespace (scripts/bench-codex.sh sets it up). Interleaves
the variants so machine noise hits them alike, and reports medians and ratios:

* `direct`: `codex exec --json …` through the npm shim (`node bin/codex.js`, what a user or the
  Codex SDK runs), with the flags the bridge uses (same provider, sandbox, telemetry off);
* `native`: the same command on the native binary behind the shim (what the bridge runs);
* `bridge`: `bridge codex send` with the request JSON on stdin (mock URL and key as `baseUrl` /
  `apiKey`);
* time to first content (direct: the first `agent_message` item; bridge: the first
  `[CONTENT_DELTA]` line; Codex exec prints whole messages, so this is the first message),
* total wall time until the process exits,
* peak RSS of the bridge process itself (VmHWM of the bridge pid, sampled until it exits; the
  CLI child is not counted).
"""
import json, os, statistics, subprocess, sys, tempfile, time

RUNS = int(os.environ.get("RUNS", "7"))
BRIDGE = sys.argv[1]
CODEX = sys.argv[2]
BASE_URL = sys.argv[3]
PROMPT = "MOCK:text say hello"
MODEL = "gpt-5.5"
KEY = "sk-bench-000000"


def native_binary():
    root = os.path.dirname(os.path.dirname(os.path.realpath(CODEX)))
    for pkg in (os.path.join(root, "node_modules/@openai/codex-linux-x64"),
                os.path.join(os.path.dirname(root), "codex-linux-x64")):
        exe = os.path.join(pkg, "vendor/x86_64-unknown-linux-musl/bin/codex")
        if os.path.isfile(exe):
            return exe
    sys.exit("native codex binary not found behind " + CODEX)


NATIVE = native_binary()


def env_for(home):
    return {
        "PATH": os.environ["PATH"], "HOME": home, "CODEX_HOME": os.path.join(home, ".codex"),
        "TMPDIR": os.path.join(home, "tmp"), "LANG": "C.UTF-8", "CODEX_PATH": CODEX,
        "BRIDGE_CODEX_API_KEY": KEY,
    }


def vm_hwm_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def run(argv, stdin_bytes, is_first_content, home, sample_rss):
    start = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin_bytes is not None else subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=env_for(home), cwd=os.path.join(home, "work"))
    if stdin_bytes is not None:
        p.stdin.write(stdin_bytes)
        p.stdin.close()
    first = None
    peak = 0
    for line in p.stdout:
        if first is None and is_first_content(line):
            first = time.monotonic() - start
        if sample_rss:
            peak = max(peak, vm_hwm_kb(p.pid) or 0)
    p.wait()
    return first, time.monotonic() - start, peak


def exec_argv(program, home):
    p = "bridge"
    return [program, "exec", "--json", "--color", "never", "--skip-git-repo-check",
            "--sandbox", "workspace-write", "-C", os.path.join(home, "work"), "-m", MODEL,
            "-c", f'model_provider="{p}"', "-c", f'model_providers.{p}.name="{p}"',
            "-c", f'model_providers.{p}.base_url="{BASE_URL}"',
            "-c", f'model_providers.{p}.wire_api="responses"',
            "-c", f'model_providers.{p}.env_key="BRIDGE_CODEX_API_KEY"',
            "-c", "analytics.enabled=false", "-c", "check_for_update_on_startup=false",
            "-c", "tools.update_plan.enabled=true",
            "--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps",
            "--", PROMPT]


def first_message(line):
    return b'"agent_message"' in line


def direct(home):
    return run(exec_argv(CODEX, home), None, first_message, home, False)


def native(home):
    return run(exec_argv(NATIVE, home), None, first_message, home, False)


def bridged(home):
    req = json.dumps({"message": PROMPT, "model": MODEL, "baseUrl": BASE_URL, "apiKey": KEY,
                      "cwd": os.path.join(home, "work"), "permissionMode": "default"})
    return run([BRIDGE, "codex", "send"], req.encode(), lambda l: l.startswith(b"[CONTENT_DELTA]"),
               home, True)


def main():
    variants = {"direct": direct, "native": native, "bridge": bridged}
    results = {k: [] for k in variants}
    kinds = list(variants)
    with tempfile.TemporaryDirectory() as root:
        for i in range(RUNS * len(kinds)):
            kind = kinds[i % len(kinds)]
            home = os.path.join(root, f"h{i}")
            for d in ("", ".codex", "tmp", "work"):
                os.makedirs(os.path.join(home, d), exist_ok=True)
            first, total, peak = variants[kind](home)
            if first is None:
                sys.exit(f"{kind} run {i} produced no content")
            results[kind].append((first, total, peak))
    med = lambda kind, k: statistics.median(r[k] for r in results[kind])
    d_first, n_first, b_first = med("direct", 0), med("native", 0), med("bridge", 0)
    d_total, n_total, b_total = med("direct", 1), med("native", 1), med("bridge", 1)
    peak = max(r[2] for r in results["bridge"])
    print(f"runs per variant: {RUNS} (interleaved)")
    print(f"first content  direct (npm shim) {d_first*1000:7.1f} ms   native {n_first*1000:7.1f} ms   bridge {b_first*1000:7.1f} ms")
    print(f"               ratio bridge/direct {b_first/d_first:.3f}   bridge/native {b_first/n_first:.3f}")
    print(f"total time     direct (npm shim) {d_total*1000:7.1f} ms   native {n_total*1000:7.1f} ms   bridge {b_total*1000:7.1f} ms")
    print(f"               ratio bridge/direct {b_total/d_total:.3f}   bridge/native {b_total/n_total:.3f}")
    print(f"bridge process peak RSS (VmHWM, bridge only): {peak/1024:.1f} MiB")


main()
