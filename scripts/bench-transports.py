#!/usr/bin/env python3
"""Side-by-side: each provider's two transports through `bridge`, against the mock.

Runs inside a loopback-only network namespace (scripts/bench-transports.sh sets it up). For each
provider (qwen, copilot, gemini) the `acp` transport (the CLI's ACP server: handshake, session,
prompt) and the `json` transport (its one-shot JSON print mode) run interleaved, so machine noise
hits both alike; reports medians and the json/acp ratios of:

* time to the first `[CONTENT_DELTA]` line,
* total wall time until the bridge exits,
* peak RSS of the bridge process itself (VmHWM of the bridge pid; the CLI is not counted).
"""
import json, os, sys

from bench_harness import interleave, median, peak_mib, run

RUNS = int(os.environ.get("RUNS", "5"))
BRIDGE = os.path.abspath(sys.argv[1])  # the runs chdir into their scratch home
BASE_URL = sys.argv[2]
PROVIDERS = sys.argv[3].split(",") if len(sys.argv) > 3 else ["qwen", "copilot", "gemini"]
KEY = "sk-bench-000000"


def env_for(provider, home):
    env = {"PATH": os.environ["PATH"], "HOME": home, "TMPDIR": os.path.join(home, "tmp"),
           "LANG": "C.UTF-8"}
    if provider == "qwen":
        env.update(OPENAI_API_KEY=KEY, OPENAI_BASE_URL=BASE_URL + "/v1", OPENAI_MODEL="mock-qwen-model")
    elif provider == "copilot":
        env.update(COPILOT_OFFLINE="true", COPILOT_PROVIDER_BASE_URL=BASE_URL + "/v1",
                   COPILOT_PROVIDER_TYPE="openai", COPILOT_PROVIDER_API_KEY=KEY, COPILOT_MODEL="gpt-4.1")
    elif provider == "gemini":
        env.update(GEMINI_API_KEY=KEY, GOOGLE_GEMINI_BASE_URL=BASE_URL)
        # Headless Gemini with a base URL needs the auth type in its settings (see the README).
        os.makedirs(os.path.join(home, ".gemini"), exist_ok=True)
        with open(os.path.join(home, ".gemini/settings.json"), "w") as f:
            json.dump({"security": {"auth": {"selectedType": "gemini-api-key"}}}, f)
    return env


def variant(provider, transport):
    def go(home):
        req = json.dumps({"message": "MOCK:text say hello", "transport": transport,
                          "cwd": os.path.join(home, "work")})
        return run([BRIDGE, provider, "send"], req.encode(), lambda l: l.startswith(b"[CONTENT_DELTA]"),
                   env_for(provider, home), os.path.join(home, "work"), True)
    return go


def main():
    variants = {}
    for p in PROVIDERS:
        variants[f"{p} acp"] = variant(p, "acp")
        variants[f"{p} json"] = variant(p, "json")
    results = interleave(variants, RUNS, ("tmp", "work"))
    print(f"runs per variant: {RUNS} (interleaved)")
    for p in PROVIDERS:
        a, j = f"{p} acp", f"{p} json"
        fa, fj = median(results, a, 0), median(results, j, 0)
        ta, tj = median(results, a, 1), median(results, j, 1)
        print(f"{p:8} first content  acp {fa*1000:7.0f} ms  json {fj*1000:7.0f} ms  json/acp {fj/fa:.2f}")
        print(f"{'':8} total time     acp {ta*1000:7.0f} ms  json {tj*1000:7.0f} ms  json/acp {tj/ta:.2f}")
        print(f"{'':8} bridge peak RSS acp {peak_mib(results, a):.1f} MiB  json {peak_mib(results, j):.1f} MiB")


main()
