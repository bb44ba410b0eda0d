#!/usr/bin/env bash
# Side-by-side benchmark of sessions: the second turn of a conversation kept warm by
# `bridge daemon` (the plugin's daemon.js protocol) or
# `bridge <provider> session` vs resumed by a second `bridge <provider> send`, and (Claude) vs the
# bare CLI kept warm by a minimal driver; plus the bridge's RSS after 20 turns vs after 1. Claude
# and Qwen (ACP) against the project's mock model server (interleaved runs; medians and ratios).
# Runs everything inside a loopback-only network namespace. Needs root and the pinned CLIs
# (tests/install-clis.sh). Usage: scripts/bench-session.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
tests/install-clis.sh claude qwen >/dev/null
CACHE="${BRIDGE_CLI_CACHE:-$HOME/.cache/bridge-clis}"
# shellcheck disable=SC1091
. "$CACHE/path.env"
export PATH="$BRIDGE_CLI_PATH:$PATH"
cargo build --release --quiet -p bridge --bin bridge -p mock-llm --bin mock-llm
TARGET="$(cd "${CARGO_TARGET_DIR:-target}" && pwd)/release"
CLAUDE="$(command -v claude)"
exec tests/netns-run env RUNS="$RUNS" bash -c '
  set -euo pipefail
  "$1/mock-llm" --port 18126 > /tmp/bench-mock.$$ 2>&1 &
  MOCK=$!
  trap "kill $MOCK 2>/dev/null" EXIT
  for _ in $(seq 50); do grep -q listening /tmp/bench-mock.$$ 2>/dev/null && break; sleep 0.1; done
  python3 scripts/bench-session.py "$1/bridge" "$2" http://127.0.0.1:18126
' bench "$TARGET" "$CLAUDE"
