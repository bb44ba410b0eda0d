#!/usr/bin/env python3
"""Side-by-side: the real Claude Code CLI against the mock, run directly vs through `bridge`.

Runs inside a loopback-only network namespace (scripts/bench-claude.sh sets it up). Alternates
the two variants so machine noise hits both alike, and reports medians and ratios:

* time to first content delta (direct: first `text_delta` stream event; bridge: first
  `[CONTENT_DELTA]` line),
* total wall time until the process exits,
* a third variant, the CLI run directly as the bridge launches it: without `-p` and with stdin
  kept open until its result (what the Agent SDK does too, so approvals and interrupts can be
  sent; with stdin closed after the prompt Claude Code needs `-p`, which answers later),
* peak RSS of the bridge process itself (VmHWM of the bridge pid, sampled until it exits;
  the CLI child is not counted).
"""
import json, os, sys

from bench_harness import interleave, median, peak_mib, run as run_once

RUNS = int(os.environ.get("RUNS", "7"))
BRIDGE = os.path.abspath(sys.argv[1])  # the runs chdir into their scratch home
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

def run(argv, stdin_bytes, is_first_content, home, sample_rss, keep_stdin_open=False):
    return run_once(argv, stdin_bytes, is_first_content, env_for(home), os.path.join(home, "work"),
                    sample_rss, b'"type":"result"' if keep_stdin_open else None)

def direct(home, keep_open=False):
    msg = json.dumps({"type": "user", "message": {"role": "user", "content": PROMPT},
                      "parent_tool_use_id": None, "session_id": ""}) + "\n"
    # With stdin closed after the message Claude Code needs `-p` (without it, EOF ends it before
    # it answers); kept open, it runs as the Agent SDK and the bridge launch it, without `-p`.
    print_flag = [] if keep_open else ["-p"]
    argv = [CLAUDE, *print_flag, "--input-format", "stream-json", "--output-format", "stream-json",
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
    results = interleave(variants, RUNS, (".claude", "tmp", "work"))
    med = lambda kind, k: median(results, kind, k)
    d_first, b_first = med("direct", 0), med("bridge", 0)
    d_total, b_total = med("direct", 1), med("bridge", 1)
    o_first, o_total = med("direct_open", 0), med("direct_open", 1)
    print(f"runs per variant: {RUNS} (interleaved)")
    print(f"first content  direct {d_first*1000:7.1f} ms   direct, stdin open {o_first*1000:7.1f} ms   bridge {b_first*1000:7.1f} ms")
    print(f"               ratio bridge/direct {b_first/d_first:.3f}   bridge/direct-stdin-open {b_first/o_first:.3f}")
    print(f"total time     direct {d_total*1000:7.1f} ms   direct, stdin open {o_total*1000:7.1f} ms   bridge {b_total*1000:7.1f} ms")
    print(f"               ratio bridge/direct {b_total/d_total:.3f}   bridge/direct-stdin-open {b_total/o_total:.3f}")
    print(f"bridge process peak RSS (VmHWM, bridge only): {peak_mib(results, 'bridge'):.1f} MiB")

main()
