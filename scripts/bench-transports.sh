#!/usr/bin/env bash
# Side-by-side benchmark of the two transports of the ACP providers (the CLI's ACP server vs its
# one-shot JSON print mode), through `bridge <provider> send`, against the project's mock model
# server (interleaved runs; medians and ratios). Runs everything inside a loopback-only network
# namespace. Needs root and the pinned CLIs (tests/install-clis.sh).
# Usage: scripts/bench-transports.sh [RUNS] [PROVIDERS, comma-separated: qwen,copilot,gemini]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
PROVIDERS="${2:-qwen,copilot,gemini}"
tests/install-clis.sh >/dev/null
CACHE="${BRIDGE_CLI_CACHE:-$HOME/.cache/bridge-clis}"
# shellcheck disable=SC1091
. "$CACHE/path.env"
export PATH="$BRIDGE_CLI_PATH:$PATH"
cargo build --release --quiet -p bridge --bin bridge -p mock-llm --bin mock-llm
# The build goes where cargo puts it (CARGO_TARGET_DIR, else ./target).
export TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
exec tests/netns-run env RUNS="$RUNS" TARGET="$TARGET" bash -c '
  set -euo pipefail
  "$TARGET/release/mock-llm" --port 18125 > /tmp/bench-mock.$$ 2>&1 &
  MOCK=$!
  trap "kill $MOCK 2>/dev/null" EXIT
  for _ in $(seq 50); do grep -q listening /tmp/bench-mock.$$ 2>/dev/null && break; sleep 0.1; done
  python3 scripts/bench-transports.py "$TARGET/release/bridge" http://127.0.0.1:18125 "$1"
' bench "$PROVIDERS"
