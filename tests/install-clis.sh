#!/usr/bin/env bash
# Install the pinned real agent CLIs that the end-to-end tests drive.
#
# Each CLI goes into its own npm prefix in a cache OUTSIDE the repository:
#   ${BRIDGE_CLI_CACHE:-$HOME/.cache/bridge-clis}/<package-sanitized>@<version>/
# so a fresh clone, `cargo clean` or `git clean` never has to download them again.
# The script is idempotent: a CLI whose binary already answers `--version` is skipped.
#
# At the end it writes ${BRIDGE_CLI_CACHE}/path.env:
#   export BRIDGE_CLI_PATH=<bin dir 1>:<bin dir 2>:...
# Tests (or a shell) source it and put $BRIDGE_CLI_PATH in front of PATH.
#
# Usage: tests/install-clis.sh            install everything in the table
#        tests/install-clis.sh claude     install only the rows whose bin is named
#
# Needs: node + npm on PATH and access to the npm registry (nothing else is downloaded).
set -euo pipefail

# package                      version   bin       (one line per CLI; keep the columns)
CLIS=(
  "@anthropic-ai/claude-code   2.1.197   claude"
  "@openai/codex               0.171.0   codex"
)

CACHE="${BRIDGE_CLI_CACHE:-$HOME/.cache/bridge-clis}"
HERE="$(cd "$(dirname "$0")" && pwd)"

# Run the freshly installed CLIs (`--version`) inside a loopback-only network namespace
# when we can (root), so not even a version check can talk to the internet.
ISOLATE=()
if [ "$(id -u)" -eq 0 ] && [ -x "$HERE/netns-run" ] && "$HERE/netns-run" true 2>/dev/null; then
  ISOLATE=("$HERE/netns-run")
fi

die() { printf 'install-clis: %s\n' "$*" >&2; exit 1; }
log() { printf 'install-clis: %s\n' "$*" >&2; }

command -v npm >/dev/null 2>&1 || die "npm not found on PATH (install Node.js 20+ and npm)"
command -v node >/dev/null 2>&1 || die "node not found on PATH (install Node.js 20+)"
mkdir -p "$CACHE"

# "@scope/name" -> "scope-name": one flat directory name per package.
sanitize() { local s="${1#@}"; printf '%s' "${s//\//-}"; }

# `<bin> --version` must succeed and mention the pinned version.
works() {
  local bin="$1" version="$2" out
  [ -x "$bin" ] || return 1
  # The CLIs must not phone home while answering --version; keep it short and quiet.
  out="$(DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    timeout 60 "${ISOLATE[@]}" "$bin" --version 2>/dev/null)" || return 1
  case "$out" in *"$version"*) return 0 ;; *) return 1 ;; esac
}

# Whether the user asked for `bin` (no arguments: every CLI).
wanted() {
  local w
  [ "${#SELECTED[@]}" -eq 0 ] && return 0
  for w in "${SELECTED[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

SELECTED=("$@")
for w in "${SELECTED[@]}"; do
  known=0
  for row in "${CLIS[@]}"; do
    read -r _ _ b <<<"$row"
    [ "$b" = "$w" ] && known=1
  done
  [ "$known" -eq 1 ] || die "unknown CLI '$w' (known: $(for r in "${CLIS[@]}"; do read -r _ _ b <<<"$r"; printf '%s ' "$b"; done))"
done
BIN_DIRS=()
failed=0

for row in "${CLIS[@]}"; do
  read -r pkg version bin <<<"$row"
  wanted "$bin" || continue
  dir="$CACHE/$(sanitize "$pkg")@$version"
  bindir="$dir/node_modules/.bin"
  exe="$bindir/$bin"

  if works "$exe" "$version"; then
    log "$pkg@$version already installed ($exe)"
  else
    log "installing $pkg@$version into $dir"
    # Start clean: a half-finished or broken earlier install is not repaired by npm in place.
    rm -rf "$dir"
    mkdir -p "$dir"
    # --prefix keeps everything inside $dir; no global install, no audit/fund chatter.
    # npm 11 may warn that install scripts are "not yet covered by allowScripts": harmless
    # here, the native Claude binary ships as an optional dependency and is linked without them.
    if ! npm install --prefix "$dir" --no-audit --no-fund --save-exact --include=optional "$pkg@$version" >&2; then
      log "npm install of $pkg@$version failed"
      failed=1
      continue
    fi
    if ! works "$exe" "$version"; then
      log "$exe does not answer '--version' with $version after install"
      "${ISOLATE[@]}" "$exe" --version >&2 || true
      failed=1
      continue
    fi
  fi
  log "$bin --version: $("${ISOLATE[@]}" "$exe" --version 2>/dev/null | head -n1)"
  BIN_DIRS+=("$bindir")
done

[ "$failed" -eq 0 ] || die "some CLIs failed to install (see above)"

joined="$(IFS=:; printf '%s' "${BIN_DIRS[*]}")"
if [ "${#SELECTED[@]}" -eq 0 ]; then
  # Only a full run rewrites path.env, so a partial run never drops a directory from it.
  printf 'export BRIDGE_CLI_PATH=%s\n' "$joined" >"$CACHE/path.env"
  log "wrote $CACHE/path.env"
  cat "$CACHE/path.env"
else
  printf 'export BRIDGE_CLI_PATH=%s\n' "$joined"
fi
