#!/usr/bin/env bash
# Bounded fuzz run of every cargo-fuzz target (stable toolchain: `-s none`, no sanitizer).
#
#   fuzz/run-short.sh                     # the short run scripts/test does: per target, 20000
#                                         # executions or 12 s, whichever comes first (about
#                                         # 90 s for the eight targets, plus the build)
#   FUZZ_RUNS=-1 FUZZ_SECONDS=600 fuzz/run-short.sh   # the longer run: 10 min per target
#   fuzz/run-short.sh line_reader         # only the named targets
#
# New inputs go to a scratch corpus (fuzz/corpus/<target>, ignored by git) next to the
# committed seeds (fuzz/seeds/<target>); a failing input is saved under fuzz/artifacts/<target>/
# and the script exits non-zero. Reproduce one with
#   cargo fuzz run -s none <target> fuzz/artifacts/<target>/crash-…
# The executions per target are printed and written to fuzz/target/fuzz-summary.txt
# (FUZZ_SUMMARY overrides the path).
set -euo pipefail
cd "$(dirname "$0")"

RUNS="${FUZZ_RUNS:-20000}"
SECS="${FUZZ_SECONDS:-12}"
SUMMARY="${FUZZ_SUMMARY:-target/fuzz-summary.txt}"

command -v cargo-fuzz >/dev/null 2>&1 || {
  echo "run-short.sh: cargo-fuzz is not installed: cargo install cargo-fuzz --locked" >&2
  exit 1
}

if [ "$#" -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(cargo fuzz list)
fi

build_log="$(mktemp)"
cargo fuzz build -s none >"$build_log" 2>&1 || { cat "$build_log" >&2; exit 1; }
rm -f "$build_log"
mkdir -p "$(dirname "$SUMMARY")"
: > "$SUMMARY"
status=0
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "seeds/$t"
  dict=()
  [ -f "dict/$t.dict" ] && dict=("-dict=dict/$t.dict")
  log="$(mktemp)"
  start=$(date +%s)
  if cargo fuzz run -s none "$t" "corpus/$t" "seeds/$t" -- \
      -runs="$RUNS" -max_total_time="$SECS" -print_final_stats=1 "${dict[@]}" >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    status=1
    grep -E -A12 'panicked|ERROR: libFuzzer' "$log" | head -40 >&2 || true
  fi
  secs=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  line="$(printf '%-18s %-6s %10s executions in %3s s' "$t" "$result" "${execs:-?}" "$secs")"
  echo "$line"
  echo "$line" >> "$SUMMARY"
  rm -f "$log"
done
exit "$status"
