#!/usr/bin/env bash
# Side-by-side benchmark: the real Codex CLI against the project's mock model server (OpenAI
# Responses), run directly (through its npm shim, and as the native binary) vs through
# `bridge codex send` (interleaved runs; medians and ratios).
# Runs everything inside a loopback-only network namespace. Needs root and the pinned CLI
# (tests/install-clis.sh). Usage: scripts/bench-codex.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
tests/install-clis.sh codex >/dev/null
CACHE="${BRIDGE_CLI_CACHE:-$HOME/.cache/bridge-clis}"
export PATH="$CACHE/openai-codex@0.171.0/node_modules/.bin:$PATH"
TARGET="${CARGO_TARGET_DIR:-target}"
cargo build --release --quiet -p bridge --bin bridge -p mock-llm --bin mock-llm
CODEX="$(command -v codex)"
exec tests/netns-run env RUNS="$RUNS" TARGET="$TARGET" bash -c '
  set -euo pipefail
  "$TARGET/release/mock-llm" --port 18124 > /tmp/bench-mock.$$ 2>&1 &
  MOCK=$!
  trap "kill $MOCK 2>/dev/null" EXIT
  for _ in $(seq 50); do grep -q listening /tmp/bench-mock.$$ 2>/dev/null && break; sleep 0.1; done
  python3 scripts/bench-codex.py "$TARGET/release/bridge" "$1" http://127.0.0.1:18124/v1
' bench "$CODEX"
