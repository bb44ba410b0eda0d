#!/usr/bin/env python3
"""Side-by-side: the second turn of a conversation, kept warm by `bridge <provider> session` vs
resumed by a second `bridge <provider> send`, against the mock.

Runs inside a loopback-only network namespace (scripts/bench-session.sh sets it up). Each run
is a fresh home; turn 1 is `MOCK:text first turn`, turn 2 `MOCK:recall …` (the mock quotes the
earlier user messages, so each run also checks that the conversation was kept). The variants run
interleaved, so machine noise hits them alike; reports medians of turn 2's time to first content
and total time, and the ratios:

* warm: `bridge <p> session --format jsonl`, turn 2 timed from writing its line to its
  `turn_end` (first content: the first `text_delta` event),
* cold: `bridge <p> send --format jsonl` with the `sessionId` of a first send; the second send
  process is timed until it exits (first content: its first `text_delta` event),
* bare warm (claude only, the limit): the CLI itself kept warm by the minimal driver below
  (`claude` stream-json as the bridge launches it, stdin open), turn 2 timed from writing its user line to its
  `result` line (first content: the first line with `"text_delta"`),

* daemon (claude only): `bridge daemon`, turn 2 as a `claude.send` request with the `sessionId`
  of turn 1, timed from writing its line to its `done` (first content: its first
  `[CONTENT_DELTA]` line), the way the plugin's `DaemonBridge.java` drives `daemon.js`,

for claude and qwen (ACP). Then the bridge's own memory over a long conversation: VmRSS of the
`bridge claude session` pid after turn 1's `turn_end` and after turn 20's (the CLI child is not
counted), and VmRSS of `bridge daemon` (its own process, not the CLIs) holding 1 and 10 idle
Claude sessions.
"""
import json, os, statistics, sys, tempfile, time

from bench_harness import Driver, interleave, median, spawn, guarded

RUNS = int(os.environ.get("RUNS", "5"))
BRIDGE = os.path.abspath(sys.argv[1])  # the runs chdir into their scratch home
CLAUDE = sys.argv[2]
BASE_URL = sys.argv[3]
PROVIDERS = ("claude", "qwen")
FIRST = "MOCK:text first turn"
SECOND = "MOCK:recall second turn"
LONG_TURNS = 20
TURN_TIMEOUT = 120  # seconds a run may take before the benchmark gives up (a turn that never ends)
CLAUDE_ARGV = [CLAUDE, "--input-format", "stream-json", "--output-format", "stream-json",
               "--verbose", "--include-partial-messages", "--permission-prompt-tool", "stdio"]


def env_for(provider, home):
    env = {"PATH": os.environ["PATH"], "HOME": home, "TMPDIR": os.path.join(home, "tmp"),
           "LANG": "C.UTF-8"}
    if provider == "claude":
        env.update(CLAUDE_CONFIG_DIR=os.path.join(home, ".claude"), ANTHROPIC_BASE_URL=BASE_URL,
                   ANTHROPIC_API_KEY="sk-ant-bench-000000", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                   DISABLE_TELEMETRY="1", DISABLE_AUTOUPDATER="1", DISABLE_ERROR_REPORTING="1",
                   CLAUDE_CODE_MAX_RETRIES="1", CLAUDE_CODE_PATH=CLAUDE)
    elif provider == "qwen":
        env.update(OPENAI_API_KEY="sk-bench-000000", OPENAI_BASE_URL=BASE_URL + "/v1",
                   OPENAI_MODEL="mock-qwen-model", BRIDGE_ACP_HANDSHAKE_TIMEOUT="120")
    return env


def vm_rss_kb(pid):
    """Current resident set (VmRSS) of `pid` in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for {pid}")


def is_text_delta(line):
    return b'"type":"text_delta"' in line


def is_turn_end(line):
    return b'"type":"turn_end"' in line


def check(kind, end_line):
    """The turn succeeded and the mock saw turn 1 (the conversation was kept)."""
    end = json.loads(end_line)
    ok = end.get("success", end.get("subtype") == "success" and not end.get("is_error"))
    if not ok or FIRST not in end.get("result", ""):
        sys.exit(f"{kind}: turn 2 did not recall turn 1: {end_line.decode().strip()}")


def warm(provider):
    def go(home):
        work = os.path.join(home, "work")
        chat = Driver([BRIDGE, provider, "session", "--format", "jsonl"], env_for(provider, home), work,
                      is_text_delta, is_turn_end)
        chat.turn(json.dumps({"message": FIRST}))
        first, total, end = chat.turn(json.dumps({"message": SECOND}))
        chat.close()
        check(f"{provider} warm", end)
        return first, total, 0
    return go


def cold(provider):
    def go(home):
        work, env = os.path.join(home, "work"), env_for(provider, home)
        argv = [BRIDGE, provider, "send", "--format", "jsonl"]
        one = spawn(argv, env, work)
        out, _ = one.communicate(json.dumps({"message": FIRST}).encode())
        end = json.loads([l for l in out.splitlines() if is_turn_end(l)][-1])
        req = json.dumps({"message": SECOND, "sessionId": end["session_id"]})
        # The second send, timed alone (stdin closed after the request, as the plugin does).
        start = time.monotonic()
        p = spawn(argv, env, work)
        p.stdin.write(req.encode())
        p.stdin.close()
        first = end_at = end = None
        for line in p.stdout:
            if first is None and is_text_delta(line):
                first = time.monotonic() - start
            if is_turn_end(line):
                end_at, end = time.monotonic() - start, line
        p.wait()
        total = time.monotonic() - start
        if end is None:
            sys.exit(f"{provider} cold: the second send wrote no turn_end (status {p.returncode})")
        check(f"{provider} cold", end)
        return first, total, end_at
    return go


def user_line(text):
    return json.dumps({"type": "user", "message": {"role": "user", "content": text},
                       "parent_tool_use_id": None, "session_id": ""})


def bare_warm(home):
    # The limit: the CLI itself, kept warm by the least a client can do.
    cli = Driver(CLAUDE_ARGV, env_for("claude", home), os.path.join(home, "work"),
                 lambda l: b'"text_delta"' in l, lambda l: b'"type":"result"' in l)
    cli.turn(user_line(FIRST))
    first, total, end = cli.turn(user_line(SECOND))
    cli.close()
    check("claude bare warm", end)
    return first, total, 0


class Daemon:
    """`bridge daemon`, driven as DaemonBridge.java drives daemon.js."""

    def __init__(self, env, cwd, extra=()):
        self.p = spawn([BRIDGE, "daemon", *extra], env, cwd)
        self.cwd, self.next_id = cwd, 0
        for out in self.p.stdout:
            if b'"event":"ready"' in out:
                return
        sys.exit("bridge daemon exited before ready")

    def send(self, params):
        """One `claude.send`; returns (first content s, total s, its result line)."""
        self.next_id += 1
        rid = str(self.next_id)
        params = {"cwd": self.cwd, "env": {"CLAUDE_USE_STDIN": "true"}, **params}
        start = time.monotonic()
        self.p.stdin.write(json.dumps({"id": rid, "method": "claude.send", "params": params}).encode() + b"\n")
        self.p.stdin.flush()
        first = result = None
        for out in self.p.stdout:
            reply = json.loads(out)
            if reply.get("id") != rid:
                continue
            line = reply.get("line", "")
            if first is None and line.startswith("[CONTENT_DELTA]"):
                first = time.monotonic() - start
            if line.startswith("{"):
                result = line.encode()
            if reply.get("done"):
                if not reply.get("success"):
                    sys.exit(f"daemon turn failed: {reply}")
                return first, time.monotonic() - start, result
        sys.exit(f"bridge daemon exited (status {self.p.wait()}) during a turn")

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def daemon(home):
    d = Daemon(env_for("claude", home), os.path.join(home, "work"))
    _, _, result = d.send({"message": FIRST})
    first, total, end = d.send({"message": SECOND, "sessionId": json.loads(result)["sessionId"]})
    d.close()
    check("claude daemon", end)
    return first, total, 0


def daemon_idle_rss(home):
    """VmRSS of `bridge daemon` (itself only) with 1 and with 10 idle Claude sessions, in KiB."""
    d = Daemon(env_for("claude", home), os.path.join(home, "work"), ("--max-warm", "10"))
    d.send({"message": FIRST})
    one = vm_rss_kb(d.p.pid)
    for n in range(2, 11):
        d.send({"message": f"MOCK:text conversation {n}"})
    ten = vm_rss_kb(d.p.pid)
    d.close()
    return one, ten


def long_session(home):
    """VmRSS of the bridge after turn 1 and after turn LONG_TURNS, in KiB."""
    chat = Driver([BRIDGE, "claude", "session", "--format", "jsonl"], env_for("claude", home),
                  os.path.join(home, "work"), is_text_delta, is_turn_end)
    chat.turn(json.dumps({"message": FIRST}))
    after_one = vm_rss_kb(chat.p.pid)
    for n in range(2, LONG_TURNS + 1):
        _, _, end = chat.turn(json.dumps({"message": f"MOCK:recall turn {n}"}))
    after_many = vm_rss_kb(chat.p.pid)
    chat.close()
    check(f"claude turn {LONG_TURNS}", end)
    return after_one, after_many


def main():
    variants = {}
    for p in PROVIDERS:
        variants[f"{p} warm"] = warm(p)
        variants[f"{p} cold"] = cold(p)
    variants["claude bare warm"] = bare_warm
    variants["claude daemon"] = daemon
    results = interleave({k: guarded(f, TURN_TIMEOUT) for k, f in variants.items()}, RUNS, (".claude", "tmp", "work"))
    med = lambda kind, k: median(results, kind, k)
    print(f"runs per variant: {RUNS} (interleaved); turn 2 of a conversation")
    for p in PROVIDERS:
        w, c = f"{p} warm", f"{p} cold"
        fw, fc, tw, tc = med(w, 0), med(c, 0), med(w, 1), med(c, 1)
        line_f = f"{p:7} first content  warm {fw*1000:7.1f} ms   cold {fc*1000:7.1f} ms"
        line_t = f"{'':7} total time     warm {tw*1000:7.1f} ms   cold {tc*1000:7.1f} ms" \
                 f" (its turn_end at {med(c, 2)*1000:.1f} ms)"
        ratio_f, ratio_t = f"warm/cold {fw/fc:.3f}", f"warm/cold {tw/tc:.3f}"
        if p == "claude":
            b = "claude bare warm"
            fb, tb = med(b, 0), med(b, 1)
            line_f += f"   bare warm CLI {fb*1000:7.1f} ms"
            line_t += f"   bare warm CLI {tb*1000:7.1f} ms"
            ratio_f += f"   warm/bare-warm {fw/fb:.3f}"
            ratio_t += f"   warm/bare-warm {tw/tb:.3f}"
            d = "claude daemon"
            fd, td = med(d, 0), med(d, 1)
            line_f += f"   daemon {fd*1000:7.1f} ms"
            line_t += f"   daemon {td*1000:7.1f} ms"
            ratio_f += f"   daemon/cold {fd/fc:.3f}   daemon/bare-warm {fd/fb:.3f}"
            ratio_t += f"   daemon/cold {td/tc:.3f}   daemon/bare-warm {td/tb:.3f}"
        print(line_f)
        print(f"{'':7}                {ratio_f}")
        print(line_t)
        print(f"{'':7}                {ratio_t}")
    rss = []
    with tempfile.TemporaryDirectory() as root:
        for i in range(RUNS):
            home = os.path.join(root, f"l{i}")
            for d in ("", ".claude", "tmp", "work"):
                os.makedirs(os.path.join(home, d), exist_ok=True)
            rss.append(guarded(long_session, LONG_TURNS * TURN_TIMEOUT // 4)(home))
    one = statistics.median(r[0] for r in rss)
    many = statistics.median(r[1] for r in rss)
    print(f"bridge claude session VmRSS (bridge only, median of {RUNS}): after turn 1 {one:.0f} KiB, "
          f"after turn {LONG_TURNS} {many:.0f} KiB, ratio {many/one:.3f}")
    idle = []
    with tempfile.TemporaryDirectory() as root:
        for i in range(RUNS):
            home = os.path.join(root, f"d{i}")
            for d in ("", ".claude", "tmp", "work"):
                os.makedirs(os.path.join(home, d), exist_ok=True)
            idle.append(guarded(daemon_idle_rss, 10 * TURN_TIMEOUT // 4)(home))
    one = statistics.median(r[0] for r in idle)
    ten = statistics.median(r[1] for r in idle)
    print(f"bridge daemon VmRSS (daemon only, median of {RUNS}): 1 idle session {one:.0f} KiB, "
          f"10 idle sessions {ten:.0f} KiB, ratio {ten/one:.3f}")


main()
