#!/usr/bin/env python3
"""Side-by-side: the real Claude Code CLI against the mock, run directly vs through `bridge`.

Runs inside a loopback-only network namespace (scripts/bench-claude.sh sets it up). Alternates
the two variants so machine noise hits both alike, and reports medians and ratios:

* time to first content delta (direct: first `text_delta` stream event; bridge: first
  `[CONTENT_DELTA]` line),
* total wall time until the process exits,
* a third variant, the CLI run directly with stdin kept open until its result (what the Agent
  SDK and the bridge do, so approvals and interrupts can be sent): Claude Code itself starts
  about 60 ms later when its stream-json stdin stays open,
* peak RSS of the bridge process itself (VmHWM of the bridge pid, sampled until it exits;
  the CLI child is not counted).
"""
import json, os, statistics, subprocess, sys, tempfile, time

RUNS = int(os.environ.get("RUNS", "7"))
BRIDGE = sys.argv[1]
CLAUDE = sys.argv[2]
BASE_URL = sys.argv[3]
PROMPT = "MOCK:text say hello"

def env_for(home):
    return {
        "PATH": os.environ["PATH"], "HOME": home, "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
        "TMPDIR": os.path.join(home, "tmp"), "LANG": "C.UTF-8",
        "ANTHROPIC_BASE_URL": BASE_URL, "ANTHROPIC_API_KEY": "sk-ant-bench-000000",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_MAX_RETRIES": "1",
        "CLAUDE_CODE_PATH": CLAUDE,
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

def run(argv, stdin_bytes, is_first_content, home, sample_rss, keep_stdin_open=False):
    start = time.monotonic()
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         env=env_for(home), cwd=os.path.join(home, "work"))
    p.stdin.write(stdin_bytes); p.stdin.flush()
    if not keep_stdin_open:
        p.stdin.close()
    first = None
    peak = 0
    for line in p.stdout:
        if first is None and is_first_content(line):
            first = time.monotonic() - start
        if keep_stdin_open and b'"type":"result"' in line:
            p.stdin.close()
        if sample_rss:
            peak = max(peak, vm_hwm_kb(p.pid) or 0)
    p.wait()
    total = time.monotonic() - start
    return first, total, peak

def direct(home, keep_open=False):
    msg = json.dumps({"type": "user", "message": {"role": "user", "content": PROMPT},
                      "parent_tool_use_id": None, "session_id": ""}) + "\n"
    argv = [CLAUDE, "-p", "--input-format", "stream-json", "--output-format", "stream-json",
            "--verbose", "--include-partial-messages", "--permission-prompt-tool", "stdio"]
    return run(argv, msg.encode(), lambda l: b'"text_delta"' in l, home, False, keep_open)

def direct_open(home):
    # What the Agent SDK (and the bridge) does: stdin stays open for approvals and interrupts.
    return direct(home, True)

def bridged(home):
    req = json.dumps({"message": PROMPT})
    return run([BRIDGE, "claude", "send"], req.encode(), lambda l: l.startswith(b"[CONTENT_DELTA]"), home, True)

def main():
    variants = {"direct": direct, "direct_open": direct_open, "bridge": bridged}
    results = {k: [] for k in variants}
    kinds = list(variants)
    with tempfile.TemporaryDirectory() as root:
        for i in range(RUNS * len(kinds)):
            kind = kinds[i % len(kinds)]
            home = os.path.join(root, f"h{i}")
            for d in ("", ".claude", "tmp", "work"):
                os.makedirs(os.path.join(home, d), exist_ok=True)
            first, total, peak = variants[kind](home)
            if first is None:
                sys.exit(f"{kind} run {i} produced no content")
            results[kind].append((first, total, peak))
    med = lambda kind, k: statistics.median(r[k] for r in results[kind])
    d_first, b_first = med("direct", 0), med("bridge", 0)
    d_total, b_total = med("direct", 1), med("bridge", 1)
    peak = max(r[2] for r in results["bridge"])
    o_first, o_total = med("direct_open", 0), med("direct_open", 1)
    print(f"runs per variant: {RUNS} (interleaved)")
    print(f"first content  direct {d_first*1000:7.1f} ms   direct, stdin open {o_first*1000:7.1f} ms   bridge {b_first*1000:7.1f} ms")
    print(f"               ratio bridge/direct {b_first/d_first:.3f}   bridge/direct-stdin-open {b_first/o_first:.3f}")
    print(f"total time     direct {d_total*1000:7.1f} ms   direct, stdin open {o_total*1000:7.1f} ms   bridge {b_total*1000:7.1f} ms")
    print(f"               ratio bridge/direct {b_total/d_total:.3f}   bridge/direct-stdin-open {b_total/o_total:.3f}")
    print(f"bridge process peak RSS (VmHWM, bridge only): {peak/1024:.1f} MiB")

main()
