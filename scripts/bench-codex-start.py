#!/usr/bin/env python3
"""Where Codex's start goes, without the bridge: the pinned `codex app-server` driven directly
(`initialize`, `thread/start`, `turn/start`) against Zed's codex-acp (`initialize`,
`session/new`, `session/prompt`), the same `MOCK:text hi` prompt, interleaved runs after a
warm-up round, each in a fresh home; medians of the time from the spawn to each answer and to
the first agent message delta, and each process's peak memory split into file-backed and
anonymous pages (VmHWM, RssFile, RssAnon after the turn).

Runs inside a loopback-only network namespace with the mock (scripts/bench-codex-start.sh sets
it up). With NO_LSB_RELEASE=1 the script is run in a mount namespace where `lsb_release`
cannot run (the app-server runs `lsb_release -a` twice for its user agent; codex-acp does not).
EXTRA_ARGS adds app-server arguments (e.g. `--disable shell_snapshot`) to try a feature's cost.
"""
import json, os, shutil, statistics, subprocess, sys, tempfile, time

CODEX, CODEX_ACP = sys.argv[1], sys.argv[2]
MOCK = os.environ["MOCK_URL"]
RUNS = int(os.environ.get("RUNS", "7"))
KEY = "sk-bench-000000"
SETTINGS = ['model="gpt-5.5"', 'model_provider="mock"', 'model_providers.mock.name="mock"',
            f'model_providers.mock.base_url="{MOCK}/v1"', 'model_providers.mock.wire_api="responses"',
            'model_providers.mock.env_key="BRIDGE_CODEX_API_KEY"',
            "model_providers.mock.request_max_retries=0", "model_providers.mock.stream_max_retries=0",
            "analytics.enabled=false", "check_for_update_on_startup=false"]
CONFIG = [a for s in SETTINGS for a in ("-c", s)]
# What the bridge adds to every Codex run (channels/codex: QUIET_ARGS, OFFLINE_ARGS).
BRIDGE_ARGS = ["--disable", "plugins", "--disable", "remote_plugin", "--disable", "apps"]
EXTRA = os.environ.get("EXTRA_ARGS", "").split()
PROMPT = "MOCK:text hi"


def memory(pid):
    """VmHWM, RssFile and RssAnon of `pid` in MiB."""
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmHWM", "RssFile", "RssAnon"):
                fields[key] = int(value.split()[0]) / 1024
    return fields


class Peer:
    """One JSON-RPC peer on a child's stdio; `marks` collects seconds since its spawn."""

    def __init__(self, argv, home, jsonrpc):
        env = {"PATH": os.environ["PATH"], "HOME": home, "CODEX_HOME": os.path.join(home, ".codex"),
               "TMPDIR": os.path.join(home, "tmp"), "LANG": "C.UTF-8", "BRIDGE_CODEX_API_KEY": KEY}
        self.start = time.monotonic()
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, env=env, cwd=os.path.join(home, "work"))
        self.jsonrpc, self.next_id, self.marks = jsonrpc, 0, {}

    def send(self, method, params, notify=False):
        message = {"method": method, "params": params}
        if self.jsonrpc:
            message["jsonrpc"] = "2.0"
        if not notify:
            self.next_id += 1
            message["id"] = self.next_id
        self.p.stdin.write((json.dumps(message) + "\n").encode())
        self.p.stdin.flush()
        return self.next_id

    def until(self, rid, mark, done=None):
        """Reads to the answer to `rid` (or the notification `done`), marking it as `mark` and
        the first agent message delta as `delta`."""
        for line in self.p.stdout:
            m = json.loads(line)
            method = m.get("method")
            delta = method == "item/agentMessage/delta" or (
                method == "session/update"
                and m["params"]["update"].get("sessionUpdate") == "agent_message_chunk")
            if delta and "delta" not in self.marks:
                self.marks["delta"] = time.monotonic() - self.start
            if (m.get("id") == rid and method is None) or (done and method == done):
                if "error" in m:
                    sys.exit(f"{self.p.args[0]}: {m['error']}")
                self.marks[mark] = time.monotonic() - self.start
                return m.get("result")
        sys.exit(f"{self.p.args[0]} exited before `{mark}`")

    def end(self):
        self.marks.update(memory(self.p.pid))
        self.p.kill()
        self.p.wait()
        return self.marks


def app_server(home):
    peer = Peer([CODEX, "app-server", *CONFIG, *BRIDGE_ARGS, *EXTRA], home, jsonrpc=False)
    peer.until(peer.send("initialize", {"clientInfo": {"name": "bench", "version": "1"}}), "initialize")
    peer.send("initialized", None, notify=True)
    thread = peer.until(peer.send("thread/start", {"cwd": os.path.join(home, "work"), "model": "gpt-5.5"}),
                        "session")["thread"]["id"]
    peer.send("turn/start", {"threadId": thread, "input": [{"type": "text", "text": PROMPT}]})
    peer.until(None, "turn", done="turn/completed")
    return peer.end()


def codex_acp(home):
    peer = Peer([CODEX_ACP, *CONFIG], home, jsonrpc=True)
    peer.until(peer.send("initialize", {"protocolVersion": 1, "clientCapabilities": {}}), "initialize")
    sid = peer.until(peer.send("session/new", {"cwd": os.path.join(home, "work"), "mcpServers": []}),
                     "session")["sessionId"]
    peer.until(peer.send("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": PROMPT}]}),
               "turn")
    return peer.end()


def main():
    variants = {"codex app-server": app_server, "codex-acp": codex_acp}
    results = {name: [] for name in variants}
    for round_ in range(RUNS + 1):
        for name, run in variants.items():
            home = tempfile.mkdtemp(prefix="bench-codex-start-")
            for d in (".codex", "tmp", "work"):
                os.makedirs(os.path.join(home, d))
            try:
                marks = run(home)
            finally:
                shutil.rmtree(home, ignore_errors=True)
            if round_:  # the first round warms the page cache
                results[name].append(marks)
    print(f"runs per variant: {RUNS} (interleaved, after one warm-up round); medians"
          f"{'; lsb_release masked' if os.environ.get('NO_LSB_RELEASE') == '1' else ''}"
          f"{'; app-server args ' + ' '.join(EXTRA) if EXTRA else ''}")
    ours, theirs = (results[n] for n in variants)
    med = lambda runs, key: statistics.median(r[key] for r in runs)
    for key, label in (("initialize", "spawn -> initialize answered"), ("session", "spawn -> thread/session opened"),
                       ("delta", "spawn -> first agent message delta"), ("turn", "spawn -> turn ended")):
        a, b = med(ours, key) * 1000, med(theirs, key) * 1000
        print(f"  {label:38} {a:7.1f} ms {b:7.1f} ms   app-server/codex-acp {a / b:.2f}")
    for key in ("VmHWM", "RssFile", "RssAnon"):
        a, b = med(ours, key), med(theirs, key)
        print(f"  {key + ' (MiB)':38} {a:7.1f}    {b:7.1f}      app-server/codex-acp {a / b:.2f}")


main()
