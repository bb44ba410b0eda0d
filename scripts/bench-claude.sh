#!/usr/bin/env bash
# Side-by-side benchmark: the real Claude Code CLI against the project's mock model server, run
# directly vs through `bridge claude send` (alternating runs; medians and ratios).
# Runs everything inside a loopback-only network namespace. Needs root and the pinned CLI
# (tests/install-clis.sh). Usage: scripts/bench-claude.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
tests/install-clis.sh claude >/dev/null
CACHE="${BRIDGE_CLI_CACHE:-$HOME/.cache/bridge-clis}"
# shellcheck disable=SC1091
. "$CACHE/path.env"
export PATH="$BRIDGE_CLI_PATH:$PATH"
cargo build --release --quiet --bin bridge -p bridge --bin mock-llm -p mock-llm 2>/dev/null \
  || cargo build --release --quiet -p bridge -p mock-llm
CLAUDE="$(command -v claude)"
# The build goes where cargo puts it (CARGO_TARGET_DIR, else ./target).
export TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
exec tests/netns-run env RUNS="$RUNS" TARGET="$TARGET" bash -c '
  set -euo pipefail
  "$TARGET/release/mock-llm" --port 18123 > /tmp/bench-mock.$$ 2>&1 &
  MOCK=$!
  trap "kill $MOCK 2>/dev/null" EXIT
  for _ in $(seq 50); do grep -q listening /tmp/bench-mock.$$ 2>/dev/null && break; sleep 0.1; done
  python3 scripts/bench-claude.py "$TARGET/release/bridge" "$1" http://127.0.0.1:18123
' bench "$CLAUDE"
