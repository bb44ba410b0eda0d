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
import json, os, sys

from bench_harness import interleave, median, peak_mib, run as run_once

RUNS = int(os.environ.get("RUNS", "7"))
BRIDGE = os.path.abspath(sys.argv[1])  # the runs chdir into their scratch home
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


def run(argv, stdin_bytes, is_first_content, home, sample_rss):
    return run_once(argv, stdin_bytes, is_first_content, env_for(home), os.path.join(home, "work"),
                    sample_rss)


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
    # `codex exec` through the bridge, against `codex exec` itself (the app-server transport has
    # its own side-by-side: scripts/bench-codex-transports.sh).
    return run([BRIDGE, "codex", "send", "--transport", "exec"], req.encode(),
               lambda l: l.startswith(b"[CONTENT_DELTA]"),
               home, True)


def main():
    variants = {"direct": direct, "native": native, "bridge": bridged}
    results = interleave(variants, RUNS, (".codex", "tmp", "work"))
    med = lambda kind, k: median(results, kind, k)
    d_first, n_first, b_first = med("direct", 0), med("native", 0), med("bridge", 0)
    d_total, n_total, b_total = med("direct", 1), med("native", 1), med("bridge", 1)
    print(f"runs per variant: {RUNS} (interleaved)")
    print(f"first content  direct (npm shim) {d_first*1000:7.1f} ms   native {n_first*1000:7.1f} ms   bridge {b_first*1000:7.1f} ms")
    print(f"               ratio bridge/direct {b_first/d_first:.3f}   bridge/native {b_first/n_first:.3f}")
    print(f"total time     direct (npm shim) {d_total*1000:7.1f} ms   native {n_total*1000:7.1f} ms   bridge {b_total*1000:7.1f} ms")
    print(f"               ratio bridge/direct {b_total/d_total:.3f}   bridge/native {b_total/n_total:.3f}")
    print(f"bridge process peak RSS (VmHWM, bridge only): {peak_mib(results, 'bridge'):.1f} MiB")


main()
