#!/usr/bin/env bash
# Benchmark `bridge system status` against the slowest single `--version`, side by side.
#
# Every provider `bridge system status` knows (claude, codex) is present as a fake CLI whose
# `--version` sleeps $BENCH_SLEEP seconds (default 0.3), in a throwaway HOME/PATH. Measured:
#
#   single       the slowest `--version` alone (what a parallel probe cannot beat)
#   sequential   every provider's `--version`, one after the other (what a serial probe costs)
#   status       `bridge system status`, versions NOT cached (BRIDGE_NO_CACHE=1)
#   cached       `bridge system status`, repeat with the version cache warm
#
# and prints status/single (close to 1 when the probes run in parallel), sequential/single,
# and cached/single (far below 1).
#
# Usage: scripts/bench-system-status.sh
#   BRIDGE=path/to/bridge   binary to measure (default: build --release and use it)
#   BENCH_RUNS=20           runs per command        BENCH_SLEEP=0.3   --version delay (s)
# Uses hyperfine when installed (apt install hyperfine) unless BENCH_NO_HYPERFINE=1; otherwise
# a date +%s%N loop (medians either way).
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS="${BENCH_RUNS:-20}"
SLEEP="${BENCH_SLEEP:-0.3}"
if [ -z "${BRIDGE:-}" ]; then
  printf 'building bridge (release)...\n' >&2
  cargo build --release --quiet --bin bridge
  BRIDGE="${CARGO_TARGET_DIR:-target}/release/bridge"
fi
BRIDGE="$(cd "$(dirname "$BRIDGE")" && pwd)/$(basename "$BRIDGE")"
[ -x "$BRIDGE" ] || { echo "bench: $BRIDGE is not executable" >&2; exit 1; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$TMP/home" "$TMP/bin" "$TMP/tools" "$TMP/cache"
for t in sh sleep; do ln -s "$(command -v "$t")" "$TMP/tools/$t"; done
fake() { # name version-line
  printf '#!/bin/sh\nsleep %s\necho %s\n' "$SLEEP" "'$2'" >"$TMP/bin/$1"
  chmod +x "$TMP/bin/$1"
}
fake claude '2.1.197 (Claude Code)'
fake codex 'codex-cli 0.171.0'

ENV=(env -i "PATH=$TMP/bin:$TMP/tools" "HOME=$TMP/home" "XDG_CACHE_HOME=$TMP/cache"
     "BRIDGE_PROBE_SYSTEM_DIRS=" "LANG=C.UTF-8")
# Sanity: both providers found, ready, and probed for real.
check="$("${ENV[@]}" BRIDGE_NO_CACHE=1 "$BRIDGE" system status --json)"
case "$check" in *'"ready":true'*) ;; *) echo "bench: not every provider is ready: $check" >&2; exit 1 ;; esac

NAMES=(single sequential status cached)
CMDS=(
  "$TMP/bin/claude --version"
  "sh -c '$TMP/bin/claude --version; $TMP/bin/codex --version'"
  "${ENV[*]} BRIDGE_NO_CACHE=1 $BRIDGE system status"
  "${ENV[*]} $BRIDGE system status"
)
"${ENV[@]}" "$BRIDGE" system status >/dev/null # warm the cache for `cached`

printf 'bridge: %s\nproviders: claude, codex (fake, --version sleeps %ss); %s runs each\n\n' \
  "$BRIDGE" "$SLEEP" "$RUNS"

declare -A MEDIAN_MS
if [ -z "${BENCH_NO_HYPERFINE:-}" ] && command -v hyperfine >/dev/null 2>&1; then
  args=()
  for i in "${!NAMES[@]}"; do args+=(-n "${NAMES[$i]}" "${CMDS[$i]}"); done
  hyperfine -N --warmup 2 --runs "$RUNS" --export-json "$TMP/h.json" "${args[@]}" >&2
  # One "median": line per result, in command order (hyperfine pretty-prints its JSON).
  mapfile -t med < <(grep -E '^ {6}"median":' "$TMP/h.json" | sed -E 's/.*: *([0-9.eE+-]+),?/\1/')
  for i in "${!NAMES[@]}"; do
    MEDIAN_MS[${NAMES[$i]}]="$(awk -v s="${med[$i]}" 'BEGIN { printf "%.1f", s * 1000 }')"
  done
else
  for i in "${!NAMES[@]}"; do
    times=()
    for _ in 1 2; do sh -c "${CMDS[$i]}" >/dev/null 2>&1; done
    for _ in $(seq "$RUNS"); do
      t0=$(date +%s%N); sh -c "${CMDS[$i]}" >/dev/null 2>&1; t1=$(date +%s%N)
      times+=("$(( (t1 - t0) / 1000 ))")
    done
    MEDIAN_MS[${NAMES[$i]}]="$(printf '%s\n' "${times[@]}" | sort -n |
      awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "%.1f", m / 1000 }')"
  done
fi

ratio() { awk -v a="${MEDIAN_MS[$1]}" -v b="${MEDIAN_MS[$2]}" 'BEGIN { printf "%.2f", a / b }'; }
printf '\n%-12s %10s\n' command 'median ms'
for n in "${NAMES[@]}"; do printf '%-12s %10s\n' "$n" "${MEDIAN_MS[$n]}"; done
printf '\nstatus / single      = %s   (parallel probes: close to 1)\n' "$(ratio status single)"
printf 'sequential / single  = %s   (what probing one after the other would cost)\n' "$(ratio sequential single)"
printf 'cached / single      = %s   (repeat with the version cache: far below 1)\n' "$(ratio cached single)"
