#!/usr/bin/env bash
# Where Codex's start goes, without the bridge: `codex app-server` (the pinned CLI) driven
# directly vs Zed's codex-acp, against the project's mock in a loopback-only network namespace
# (scripts/bench-codex-start.py says what is measured). Needs root, python3 and the pinned
# codex plus the bench-only codex-acp (tests/install-clis.sh).
# Usage: [NO_LSB_RELEASE=1] [EXTRA_ARGS="--disable <feature>"] scripts/bench-codex-start.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-7}"
eval "$(tests/install-clis.sh codex codex-acp)"
export PATH="$BRIDGE_CLI_PATH:$PATH"
# The native binary behind the npm shim (what the bridge runs).
shim="$(realpath "$(command -v codex)")"
CODEX="$(find "${shim%%/node_modules/*}/node_modules" -path '*/vendor/*/bin/codex' -type f | head -1)"
CODEX_ACP="$BRIDGE_LIB_CODEX_ACP/node_modules/@zed-industries/codex-acp-linux-x64/bin/codex-acp"
[ -x "$CODEX" ] || { echo "bench-codex-start: no native codex binary next to $(command -v codex)" >&2; exit 1; }
[ -x "$CODEX_ACP" ] || { echo "bench-codex-start: no $CODEX_ACP (codex-acp's linux-x64 binary)" >&2; exit 1; }
cargo build --release --quiet -p mock-llm --bin mock-llm
TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
run=(env RUNS="$RUNS" python3 scripts/bench-codex-start.py "$CODEX" "$CODEX_ACP")
if [ "${NO_LSB_RELEASE:-0}" = 1 ]; then
  # A mount namespace in which `lsb_release` is /bin/false (it fails, as if absent).
  run=(unshare -m sh -c 'mount --bind /bin/false "$(command -v lsb_release)" && exec "$@"' sh "${run[@]}")
fi
exec scripts/bench-mock-netns "$TARGET" 18129 "${run[@]}"
