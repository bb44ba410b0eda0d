#!/usr/bin/env bash
# Side-by-side benchmark of `bridge acp claude` vs Zed's claude-agent-acp and `bridge acp codex`
# vs Zed's codex-acp: one ACP client, the project's mock model server, interleaved runs after a
# warm-up round; medians and ratios of the time to the first agent_message_chunk (from
# session/new, and of the second prompt) and of the agent's peak memory (process tree, CLI, the
# adapter's own). Runs inside a loopback-only network namespace. Needs root, node and the pinned
# CLIs and adapters (tests/install-clis.sh: the adapters are bench-only, installed by key here).
# Usage: [ONLY=claude|codex] scripts/bench-acp.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-5}"
# The partial install prints the exports of what it installed (its bin dirs and the adapters').
eval "$(tests/install-clis.sh claude codex claude-agent-acp codex-acp)"
export PATH="$BRIDGE_CLI_PATH:$PATH"
CLAUDE_ACP_JS="$BRIDGE_LIB_CLAUDE_AGENT_ACP/node_modules/@zed-industries/claude-agent-acp/dist/index.js"
CODEX_ACP="$BRIDGE_LIB_CODEX_ACP/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"
[ -x "$CODEX_ACP" ] || { echo "bench-acp: no $CODEX_ACP (codex-acp's linux-x64 binary)" >&2; exit 1; }
cargo build --release --quiet -p bridge --bin bridge -p mock-llm --bin mock-llm
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
exec scripts/bench-mock-netns "$TARGET" 18127 env RUNS="$RUNS" \
  python3 scripts/bench-acp.py "$TARGET/release/bridge" "$CLAUDE_ACP_JS" "$CODEX_ACP"
