#!/usr/bin/env python3
"""Side-by-side: Codex's two transports through `bridge codex`, against the mock.

Runs inside a loopback-only network namespace (scripts/bench-codex-transports.sh sets it up).
The variants run interleaved, each run in a fresh home (its own CODEX_HOME), so machine noise
hits them alike; reports medians and the app-server/exec ratios of:

* one turn: `bridge codex send --format jsonl` (`MOCK:text`), time to the first content event
  (`text_delta` for the app-server, the whole-message `text` for exec) and total time until
  the bridge exits;
* turn 2 of a session: `bridge codex session --format jsonl`, turn 1 `MOCK:text first turn`,
  turn 2 `MOCK:recall …` timed from writing its line to its `turn_end` (the app-server keeps
  one process for the thread; exec respawns `codex exec resume` per turn). Each run checks that
  turn 2 saw turn 1.
"""
import json, os, sys

from bench_harness import Driver, interleave, median, run

RUNS = int(os.environ.get("RUNS", "5"))
BRIDGE = os.path.abspath(sys.argv[1])
API_BASE = sys.argv[2]
FIRST = "MOCK:text first turn"
SECOND = "MOCK:recall second turn"


def env_for(home):
    return {"PATH": os.environ["PATH"], "HOME": home, "CODEX_HOME": os.path.join(home, ".codex"),
            "TMPDIR": os.path.join(home, "tmp"), "LANG": "C.UTF-8",
            "BRIDGE_CODEX_BASE_URL": API_BASE, "BRIDGE_CODEX_API_KEY": "sk-bench-000000",
            "BRIDGE_CODEX_MAX_RETRIES": "0"}


def is_content(line):
    return b'"type":"text_delta"' in line or b'"type":"text"' in line


def is_turn_end(line):
    return b'"type":"turn_end"' in line


def one_turn(transport):
    def go(home):
        argv = [BRIDGE, "codex", "send", "--format", "jsonl", "--model", "gpt-5.5",
                "--transport", transport]
        return run(argv, json.dumps({"message": "MOCK:text say hello"}).encode(), is_content,
                   env_for(home), os.path.join(home, "work"), False)
    return go


def second_turn(transport):
    def go(home):
        argv = [BRIDGE, "codex", "session", "--format", "jsonl", "--model", "gpt-5.5",
                "--transport", transport]
        chat = Driver(argv, env_for(home), os.path.join(home, "work"), is_content, is_turn_end)
        chat.turn(json.dumps({"message": FIRST}))
        first, total, end = chat.turn(json.dumps({"message": SECOND}))
        chat.close()
        end = json.loads(end)
        if not end.get("success") or FIRST not in end.get("result", ""):
            sys.exit(f"{transport}: turn 2 did not recall turn 1: {end}")
        return first, total, 0
    return go


def main():
    variants = {}
    for t in ("app-server", "exec"):
        variants[f"one turn {t}"] = one_turn(t)
        variants[f"turn 2 {t}"] = second_turn(t)
    results = interleave(variants, RUNS, (".codex", "tmp", "work"))
    print(f"runs per variant: {RUNS} (interleaved)")
    for what in ("one turn", "turn 2"):
        a, e = f"{what} app-server", f"{what} exec"
        fa, fe, ta, te = median(results, a, 0), median(results, e, 0), median(results, a, 1), median(results, e, 1)
        print(f"{what:8} first content  app-server {fa*1000:7.1f} ms   exec {fe*1000:7.1f} ms   "
              f"app-server/exec {fa/fe:.3f}")
        print(f"{'':8} total time     app-server {ta*1000:7.1f} ms   exec {te*1000:7.1f} ms   "
              f"app-server/exec {ta/te:.3f}")


main()
