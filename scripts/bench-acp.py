#!/usr/bin/env python3
"""Side-by-side: `bridge acp <provider>` against Zed's ACP adapters, one client, one mock.

Runs inside a loopback-only network namespace (scripts/bench-acp.sh sets it up). The same small
ACP client (below) drives each agent: `initialize`, `session/new`, then two prompts
(`MOCK:text …`, the mock's plain text answer) in that session, answering any
`session/request_permission` with its first allow option. The variants run interleaved, a
warm-up round first (dropped), each run in a fresh home; the report gives medians and ratios.
The bridge's own caches (its CLI version and model-list cache, `$XDG_CACHE_HOME/bridge`) are
shared by all runs, as they persist on a user's machine: the warm-up round fills them.


* session/new sent → the first `agent_message_chunk` of prompt 1 (prompt 1 is sent as soon as
  `session/new` answers, so this is what a user who types at once waits);
* prompt 2 sent → its first `agent_message_chunk` (the warm session);
* the agent spawned → the first chunk of prompt 1 (`initialize` sent at once, `session/new` as
  soon as it answers, as Zed does when a thread opens): what an adapter does before
  `session/new` counts here, not above (codex-acp loads Codex at start, the bridge starts
  `codex app-server` at `session/new`);
* memory: the agent's process tree, each process at its own peak (VmHWM), split into the CLI
  (the CLI's executable and its descendants) and the rest, the adapter. codex-acp has Codex
  built in (no CLI process), so for Codex the whole trees are compared.

Claude: `bridge acp claude` vs `claude-agent-acp` (node, its dist/index.js), both running the
pinned `claude` (CLAUDE_CODE_PATH for the bridge, CLAUDE_CODE_EXECUTABLE for the adapter, which
would otherwise run the Claude Code its Agent SDK bundles). Codex: `bridge acp codex` (the
pinned `codex app-server`) vs the native `codex-acp` binary (run directly, as Zed does; its npm
launcher would add a node process); both reach the mock's Responses API through a model
provider given as `-c` settings, with the same key variable.
"""
import atexit, json, os, shutil, signal, statistics, subprocess, sys, tempfile, time

from bench_harness import TreeMemory, exe_of, guarded, interleave, spawn

RUNS = int(os.environ.get("RUNS", "5"))
BRIDGE = os.path.abspath(sys.argv[1])  # the runs chdir into their scratch home
CLAUDE_ACP_JS, CODEX_ACP = sys.argv[2], sys.argv[3]
MOCK = os.environ["MOCK_URL"]  # http://127.0.0.1:PORT (scripts/bench-mock-netns)
FIRST, SECOND = "MOCK:text hi", "MOCK:text again"
HELLO = "Hello from the mock model."  # the mock's `text` answer (tests/mock-llm)
RUN_TIMEOUT = 120  # seconds a run may take before the benchmark gives up
EXIT_WAIT = 3  # seconds an agent may take to exit once its stdin is closed
KEY = "sk-bench-000000"
CACHE = tempfile.mkdtemp(prefix="bench-acp-cache-")  # XDG_CACHE_HOME of every run
atexit.register(shutil.rmtree, CACHE, True)
CODEX_SETTINGS = [
    'model="gpt-5.5"', 'model_provider="mock"', 'model_providers.mock.name="mock"',
    f'model_providers.mock.base_url="{MOCK}/v1"', 'model_providers.mock.wire_api="responses"',
    'model_providers.mock.env_key="BRIDGE_CODEX_API_KEY"',
    "model_providers.mock.request_max_retries=0", "model_providers.mock.stream_max_retries=0",
    "analytics.enabled=false", "check_for_update_on_startup=false",
]


def package_dir(cli):
    """The install dir of the CLI on PATH named `cli` (every file of the package is below it)."""
    return os.path.realpath(shutil.which(cli)).split("/node_modules/")[0] + "/"


CLAUDE_DIR, CODEX_DIR = package_dir("claude"), package_dir("codex")


def claude_env(home):
    claude = shutil.which("claude")
    return {"PATH": os.environ["PATH"], "HOME": home, "CLAUDE_CONFIG_DIR": os.path.join(home, ".claude"),
            "TMPDIR": os.path.join(home, "tmp"), "LANG": "C.UTF-8", "XDG_CACHE_HOME": CACHE,
            "ANTHROPIC_BASE_URL": MOCK, "ANTHROPIC_API_KEY": KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "CLAUDE_CODE_MAX_RETRIES": "1",
            "CLAUDE_CODE_PATH": claude, "CLAUDE_CODE_EXECUTABLE": claude}


def codex_env(home):
    return {"PATH": os.environ["PATH"], "HOME": home, "CODEX_HOME": os.path.join(home, ".codex"),
            "TMPDIR": os.path.join(home, "tmp"), "LANG": "C.UTF-8", "XDG_CACHE_HOME": CACHE,
            "CODEX_PATH": shutil.which("codex"),
            "BRIDGE_CODEX_BASE_URL": MOCK + "/v1", "BRIDGE_CODEX_API_KEY": KEY,
            "BRIDGE_CODEX_MAX_RETRIES": "0"}


class AcpClient:
    """A minimal ACP client on the agent's stdio (JSON-RPC 2.0, one message a line). It answers
    `session/request_permission` with the first allow option and any other agent request with
    "method not found" (it offers no file system and no terminal)."""

    def __init__(self, argv, env, cwd):
        self.p = spawn(argv, env, cwd)
        self.next_id = 0

    def write(self, msg):
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", **msg}).encode() + b"\n")
        self.p.stdin.flush()

    def call(self, method, params, on_update=None):
        """Sends a request and reads to its answer; `on_update(update)` sees the session/updates."""
        self.next_id += 1
        rid = self.next_id
        self.write({"id": rid, "method": method, "params": params})
        for line in self.p.stdout:
            try:
                msg = json.loads(line)
            except ValueError:
                sys.exit(f"{self.p.args[0]} wrote a line that is not JSON: {line[:200]!r}")
            if "method" in msg and "id" in msg:
                self.answer(msg)
            elif msg.get("method") == "session/update":
                if on_update:
                    on_update(msg["params"]["update"])
            elif msg.get("id") == rid:
                if "error" in msg:
                    sys.exit(f"{self.p.args[0]}: {method} failed: {msg['error']}")
                return msg["result"]
        sys.exit(f"{self.p.args[0]} exited (status {self.p.wait()}) during {method}")

    def answer(self, request):
        if request["method"] == "session/request_permission":
            options = request["params"]["options"]
            pick = next((o for o in options if o["kind"].startswith("allow")), options[0])
            self.write({"id": request["id"],
                        "result": {"outcome": {"outcome": "selected", "optionId": pick["optionId"]}}})
        else:
            self.write({"id": request["id"], "error": {"code": -32601, "message": "method not found"}})

    def prompt(self, sid, text, since):
        """One prompt; seconds from `since` to its first agent_message_chunk."""
        first, chunks = None, []

        def on_update(update):
            nonlocal first
            if update.get("sessionUpdate") == "agent_message_chunk":
                text = update["content"].get("text", "")
                if first is None and text:  # claude-agent-acp opens each message with an empty one
                    first = time.monotonic() - since
                chunks.append(text)

        result = self.call("session/prompt", {"sessionId": sid, "prompt": [{"type": "text", "text": text}]},
                           on_update)
        said = "".join(chunks).strip()
        if result.get("stopReason") != "end_turn" or said != HELLO:
            sys.exit(f"{self.p.args[0]}: prompt {text!r} ended {result} after {said!r}")
        return first

    def close(self):
        """Closes stdin, as a client that quits does; whether the agent exited by itself within
        EXIT_WAIT s (if not, it gets SIGTERM, then SIGKILL)."""
        self.p.stdin.close()
        try:
            self.p.wait(timeout=EXIT_WAIT)
            return True
        except subprocess.TimeoutExpired:
            self.p.terminate()
            try:
                self.p.wait(timeout=EXIT_WAIT)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
            return False


def variant(argv, env_for, cli_dir):
    def go(home):
        cwd = os.path.join(home, "work")
        spawned = time.monotonic()
        client = AcpClient(argv, env_for(home), cwd)
        memory = TreeMemory(client.p.pid, lambda pid: cli_dir is not None and exe_of(pid).startswith(cli_dir))
        client.call("initialize", {"protocolVersion": 1, "clientInfo": {"name": "bench-acp", "version": "1"},
                                   "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                                          "terminal": False}})
        start = time.monotonic()
        sid = client.call("session/new", {"cwd": cwd, "mcpServers": []})["sessionId"]
        answered = time.monotonic() - start
        first = client.prompt(sid, FIRST, start)
        second = client.prompt(sid, SECOND, time.monotonic())
        tree, cli = memory.stop()
        exited = client.close()
        time.sleep(0.2)
        left = memory.left()  # the agent's children still running once it is gone
        for pid in left:
            os.kill(pid, signal.SIGKILL)
        return first, second, answered, tree, cli, exited, len(left), first + start - spawned
    return go


VARIANTS = {
    "bridge acp claude": variant([BRIDGE, "acp", "claude"], claude_env, CLAUDE_DIR),
    "claude-agent-acp": variant(["node", CLAUDE_ACP_JS], claude_env, CLAUDE_DIR),
    "bridge acp codex": variant([BRIDGE, "acp", "codex", "--model", "gpt-5.5"], codex_env, CODEX_DIR),
    "codex-acp": variant([CODEX_ACP] + [a for s in CODEX_SETTINGS for a in ("-c", s)], codex_env, None),
}


ONLY = [k for k in os.environ.get("ONLY", "").split(",") if k]  # e.g. ONLY=claude: those pairs


def main():
    pairs = [(ours, theirs) for ours, theirs in (("bridge acp claude", "claude-agent-acp"),
                                                 ("bridge acp codex", "codex-acp"))
             if not ONLY or any(o in ours for o in ONLY)]
    chosen = {k: guarded(f, RUN_TIMEOUT) for k, f in VARIANTS.items() if any(k in p for p in pairs)}
    results = interleave(chosen, RUNS,
                         (".claude", ".codex", "tmp", "work"), warmup=1)

    def med(kind, i):
        return statistics.median(r[i] for r in results[kind])

    def mem(kind):  # median tree, CLI and adapter (tree - CLI) MiB
        return (med(kind, 3) / 1024, med(kind, 4) / 1024,
                statistics.median(r[3] - r[4] for r in results[kind]) / 1024)

    print(f"runs per variant: {RUNS} (interleaved, after one warm-up round); medians")
    for ours, theirs in pairs:
        print(f"{ours}  vs  {theirs}")
        for i, what in ((0, "session/new -> prompt 1 first chunk"), (1, "prompt 2 -> first chunk"),
                        (7, "agent spawned -> prompt 1 first chunk"), (2, "session/new answered")):
            a, b = med(ours, i), med(theirs, i)
            print(f"  {what:38} {a*1000:8.1f} ms {b*1000:8.1f} ms   bridge/theirs {a/b:.3f}")
        (ta, ca, aa), (tb, cb, ab) = mem(ours), mem(theirs)
        print(f"  {'process tree, peak RSS':38} {ta:8.1f} MiB {tb:7.1f} MiB  bridge/theirs {ta/tb:.3f}")
        print(f"  {'  of which the CLI':38} {ca:8.1f} MiB {cb:7.1f} MiB")
        if cb:
            print(f"  {'  the adapter (tree - CLI)':38} {aa:8.1f} MiB {ab:7.1f} MiB  theirs/bridge {ab/aa:.1f}x")
        else:
            print(f"  {'  the adapter (tree - CLI)':38} {aa:8.1f} MiB   (codex-acp has Codex built in: "
                  f"its tree is adapter and CLI at once)")
        for kind in (ours, theirs):
            stayed = sum(not r[5] for r in results[kind])
            left = sum(r[6] for r in results[kind])
            print(f"  {kind}: still running {EXIT_WAIT} s after stdin closed in {stayed} of {RUNS} runs"
                  f" (then SIGTERM); {left} processes left after it exited")


main()
