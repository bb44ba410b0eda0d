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
#        tests/install-clis.sh codex-acp  a bench-only package (BENCH_LIBS), only ever by its key
#
# Needs: node + npm on PATH and access to the npm registry; for the PyPI rows a Python >= 3.12
# and access to PyPI (nothing else is downloaded).
set -euo pipefail

# package                      version   bin       (one line per CLI; keep the columns)
# Optional words after the bin column:
#   as=NAME       expose only this executable, as NAME, in a bin dir of its own ($dir/bin) instead
#                 of putting the package's whole node_modules/.bin on the PATH (whose helpers,
#                 `openai`, `yaml`, `uuid`…, would shadow other tools), or to rename a bin that
#                 clashes with another CLI's (@vibe-kit/grok-cli's `grok` is xAI's CLI's name).
#   reports=VER   the version `--version` prints, when it is not the package version.
#   needs=BIN     another row this CLI needs at run time (installed with it, earlier in the table).
#   newest        the newest version that installs and runs here, besides the pinned row of the
#                 same bin: installed, but not put on BRIDGE_CLI_PATH; path.env exports its bin
#                 dir as BRIDGE_NEWEST_<BIN> (tests/newest.rs runs the core e2e scenarios on it,
#                 `scripts/record --newest` records it into tests/corpus).
#   previous      for a CLI whose pinned version is already the newest in the registry: the release
#                 before it, the second tested version (installed like `newest`, exported as
#                 BRIDGE_PREVIOUS_<BIN>; `scripts/record --previous` records it into tests/corpus,
#                 so the replay snapshots show what changed between the two releases).
# Each installed row's bin dir is put in front of PATH for the rows after it (omp's launcher is
# `#!/usr/bin/env bun`).
CLIS=(
  "@anthropic-ai/claude-code   2.1.197   claude"
  # Claude Code 2.1.332 says it needs Node 22 (engines), and runs on 20: its native binary.
  "@anthropic-ai/claude-code   2.1.332   claude    newest"
  "@openai/codex               0.171.0   codex"
  # 0.171.0 is the newest Codex in the registry (2026-11-20); 0.169.1 is the release before it.
  "@openai/codex               0.169.1   codex     previous"
  "@google/gemini-cli          0.61.0    gemini"
  # 0.61.0 is the newest Gemini CLI in the registry; 0.60.0 is the release before it.
  "@google/gemini-cli          0.60.0    gemini    previous"
  "@qwen-code/qwen-code        0.15.10   qwen"
  # Qwen Code 0.24.4 declares Node >= 22 too; its --version, JSON print mode and ACP run on 20.
  "@qwen-code/qwen-code        0.24.4    qwen      newest"
  "@github/copilot             1.0.102   copilot"
  # 1.0.102 is the newest Copilot CLI in the registry; 1.0.92 is the release before it.
  "@github/copilot             1.0.92    copilot   previous"
  "opencode-ai                 1.18.33   opencode"
  # 1.18.33 is the newest opencode in the registry; 1.18.32 is the release before it.
  "opencode-ai                 1.18.32   opencode  previous"
  # bun >= 1.3.14: the runtime oh-my-pi's launcher needs.
  "bun                         1.3.14    bun       as=bun"
  "@mariozechner/pi-coding-agent 0.73.1  pi        as=pi"
  # 0.73.1 is the newest pi in the registry; 0.73.0 is the release before it.
  "@mariozechner/pi-coding-agent 0.73.0  pi        as=pi previous"
  # oh-my-pi 18.3.4 cannot be installed from the npm registry: its eleven @oh-my-pi/*@18.3.4
  # dependencies are not published (npm ETARGET); 18.2.3 is the newest whose dependencies resolve.
  "@oh-my-pi/pi-coding-agent   18.2.3    omp       as=omp needs=bun"
  # The community Grok CLI: its bin `grok` is also xAI's CLI's name (the `grok` provider), so it
  # is exposed as `grok-cli` only (the name the grok-cli channel looks for). 0.0.34 prints 1.0.1.
  # 0.0.34 is the only version ever published (2026-07-12): pinned, newest and the only one.
  "@vibe-kit/grok-cli          0.0.34    grok      as=grok-cli reports=1.0.1"
  # Test-only: acpx, a headless ACP client, drives `bridge acp <provider>` (tests/acp_agent.rs).
  # It declares Node >= 22.13 and runs on 20 for what the tests use.
  "acpx                        0.19.1    acpx      as=acpx"
)

# Test-only Node libraries (no executable), each in its own prefix in the cache; path.env
# exports BRIDGE_LIB_<KEY>=<prefix> (its node_modules holds the package, pinned, and the
# pinned extras). Select one with its key in lower case and `-` for `_` (e.g. `acp-sdk`).
# key        package                   version   extras (pinned too)
NODE_LIBS=(
  # The official ACP TypeScript SDK: the conformance script tests/acp_conformance.mjs. 1.9.0
  # is the newest with ClientSideConnection (2.x replaced it); acpx 0.19.1 runs on 1.x too.
  "ACP_SDK     @agentclientprotocol/sdk  1.9.0     zod@4.6.7"
)

# Bench-only Node packages, in NODE_LIBS' format: installed only when selected by key, never by a
# full run (no test needs them); a run that selects one prints its BRIDGE_LIB_<KEY> export.
# The two ACP adapters scripts/bench-acp.sh measures `bridge acp` against.
BENCH_LIBS=(
  # Zed's Claude adapter (on the Claude Agent SDK 0.2.83, which bundles Claude Code 2.1.83; the
  # bench points it at the pinned `claude` with CLAUDE_CODE_EXECUTABLE).
  "CLAUDE_AGENT_ACP  @zed-industries/claude-agent-acp  0.23.1"
  # Zed's Codex adapter: a native binary with Codex built in, in the optional dependency
  # @zed-industries/codex-acp-<platform> (kept with --include=optional).
  "CODEX_ACP         @zed-industries/codex-acp         0.16.0"
)

# PyPI CLIs: each goes into its own virtualenv made with a Python >= the row's minimum (found as
# python3.1x on PATH, in pyenv's versions or in /usr/bin); only a `bin/` dir holding a symlink to
# the CLI's entry point is put on BRIDGE_CLI_PATH, so the venv's `python3` never shadows the
# system's. When no Python is new enough the row is skipped with a message.
# package      version   bin    min python   module that must import (a smoke check)  [newest]
PYPI_CLIS=(
  "kimi-cli      1.51.0    kimi   3.12         kimi_cli.acp.server"
  # kimi-cli 1.52.0, its last release, is a tombstone: it prints "kimi-cli is no longer
  # maintained" and exits 0 without running the turn (recorded once with tests/record.rs), so
  # 1.51.0 is both the pinned and the newest version that runs.
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

# `<bin> --version` must succeed and mention the pinned version (on stdout or stderr: pi prints
# it on stderr).
works() {
  local bin="$1" version="$2" out
  [ -x "$bin" ] || return 1
  # The CLIs must not phone home while answering --version; keep it short and quiet.
  out="$(DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
    KIMI_CLI_NO_AUTO_UPDATE=1 KIMI_DISABLE_TELEMETRY=1 COPILOT_AUTO_UPDATE=false COPILOT_OFFLINE=true \
    PI_OFFLINE=1 \
    timeout 60 "${ISOLATE[@]}" "$bin" --version 2>&1)" || return 1
  case "$out" in *"$version"*) return 0 ;; *) return 1 ;; esac
}

# Whether `bin` was named on the command line.
named() {
  local w
  for w in "${SELECTED[@]}"; do [ "$w" = "$1" ] && return 0; done
  return 1
}

# Whether the user asked for `bin` (no arguments: every CLI).
wanted() {
  [ "${#SELECTED[@]}" -eq 0 ] || named "$1"
}

# The value of option NAME= among the words after a row's bin column.
row_opt() {
  local name="$1" word
  shift
  for word in "$@"; do
    case "$word" in "$name="*) printf '%s' "${word#"$name="}"; return 0 ;; esac
  done
  return 1
}

# A NODE_LIBS or BENCH_LIBS key as it is selected: lower case, `-` for `_`.
lib_name() { printf '%s' "$1" | tr 'A-Z_' 'a-z-'; }

SELECTED=("$@")
for w in "${SELECTED[@]}"; do
  known=0
  for row in "${NODE_LIBS[@]}" "${BENCH_LIBS[@]}"; do
    read -r key _ <<<"$row"
    [ "$(lib_name "$key")" = "$w" ] && known=1
  done
  for row in "${CLIS[@]}" "${PYPI_CLIS[@]}"; do
    read -r _ _ b rest <<<"$row"
    # shellcheck disable=SC2086
    if [ "$b" = "$w" ] || [ "$(row_opt as $rest)" = "$w" ]; then
      known=1
      # shellcheck disable=SC2086
      needs="$(row_opt needs $rest)" && SELECTED+=("$needs")
    fi
  done
  [ "$known" -eq 1 ] || die "unknown CLI '$w' (known: $(for r in "${CLIS[@]}" "${PYPI_CLIS[@]}"; do read -r _ _ b _ <<<"$r"; printf '%s ' "$b"; done; for r in "${NODE_LIBS[@]}" "${BENCH_LIBS[@]}"; do read -r k _ <<<"$r"; printf '%s ' "$(lib_name "$k")"; done))"
done
BIN_DIRS=()
NEWEST=()
failed=0

# Records a `newest` (or `previous`) row's bin dir for path.env (BRIDGE_NEWEST_<BIN>,
# BRIDGE_PREVIOUS_<BIN>).
add_newest() {
  local name
  name="$(printf '%s' "$1" | tr 'a-z-' 'A-Z_')"
  NEWEST+=("export BRIDGE_${3:-NEWEST}_$name=$2")
}

for row in "${CLIS[@]}"; do
  read -r pkg version bin rest <<<"$row"
  # shellcheck disable=SC2086
  alias_name="$(row_opt as $rest)" || alias_name=""
  # shellcheck disable=SC2086
  reported="$(row_opt reports $rest)" || reported="$version"
  wanted "$bin" || { [ -n "$alias_name" ] && wanted "$alias_name"; } || continue
  dir="$CACHE/$(sanitize "$pkg")@$version"
  bindir="$dir/node_modules/.bin"
  exe="$bindir/$bin"
  if [ -n "$alias_name" ]; then
    # Only this executable goes on the PATH, under its alias (a relative link, so the cache
    # directory can move).
    mkdir -p "$dir/bin"
    ln -sfn "../node_modules/.bin/$bin" "$dir/bin/$alias_name"
    bindir="$dir/bin"
    exe="$bindir/$alias_name"
  fi

  if works "$exe" "$reported"; then
    log "$pkg@$version already installed ($exe)"
  else
    log "installing $pkg@$version into $dir"
    # Start clean: a half-finished or broken earlier install is not repaired by npm in place.
    rm -rf "$dir"
    mkdir -p "$dir"
    # --prefix keeps everything inside $dir; no global install, no audit/fund chatter.
    # npm 11 may warn that install scripts are "not yet covered by allowScripts": harmless
    # here, the native Claude binary ships as an optional dependency and is linked without them.
    # Codex's native binary is an optional dependency too (@openai/codex-<platform>, aliased to
    # @openai/codex@<version>-<platform>): --include=optional keeps an `omit=optional` npm config
    # from dropping it (the bridge runs that binary directly, bypassing the node shim).
    if ! npm install --prefix "$dir" --no-audit --no-fund --save-exact --include=optional "$pkg@$version" >&2; then
      log "npm install of $pkg@$version failed"
      failed=1
      continue
    fi
    if [ -n "$alias_name" ]; then
      mkdir -p "$dir/bin"
      ln -sfn "../node_modules/.bin/$bin" "$dir/bin/$alias_name"
    fi
    if ! works "$exe" "$reported"; then
      log "$exe does not answer '--version' with $reported after install"
      "${ISOLATE[@]}" "$exe" --version >&2 || true
      failed=1
      continue
    fi
  fi
  log "${alias_name:-$bin} --version: $(PI_OFFLINE=1 COPILOT_AUTO_UPDATE=false "${ISOLATE[@]}" "$exe" --version 2>&1 | head -n1)"
  if [[ " $rest " == *" newest "* ]]; then
    add_newest "${alias_name:-$bin}" "$bindir"
    continue
  fi
  if [[ " $rest " == *" previous "* ]]; then
    add_newest "${alias_name:-$bin}" "$bindir" PREVIOUS
    continue
  fi
  BIN_DIRS+=("$bindir")
  export PATH="$bindir:$PATH"
done

LIBS=()
# BENCH_LIBS rows come marked, so a full run (which wants everything) passes them by.
for row in "${NODE_LIBS[@]}" "${BENCH_LIBS[@]/#/bench-only }"; do
  if [[ "$row" == "bench-only "* ]]; then
    row="${row#bench-only }"
    read -r key _ <<<"$row"
    named "$(lib_name "$key")" || continue
  fi
  read -r key pkg version extras <<<"$row"
  wanted "$(lib_name "$key")" || continue
  dir="$CACHE/$(sanitize "$pkg")@$version"
  manifest="$dir/node_modules/$pkg/package.json"
  if [ -f "$manifest" ] && node -e 'process.exit(require(process.argv[1]).version === process.argv[2] ? 0 : 1)' "$manifest" "$version"; then
    log "$pkg@$version already installed ($dir)"
  else
    log "installing $pkg@$version into $dir"
    rm -rf "$dir"
    mkdir -p "$dir"
    # shellcheck disable=SC2086
    if ! npm install --prefix "$dir" --no-audit --no-fund --save-exact --include=optional "$pkg@$version" $extras >&2; then
      log "npm install of $pkg@$version failed"
      failed=1
      continue
    fi
  fi
  LIBS+=("export BRIDGE_LIB_$key=$dir")
done

# The newest Python interpreter >= $1 (major.minor) among python3.1x on PATH, pyenv's versions
# and /usr/bin (newest first: 3.12.1 cannot import kimi-cli 1.51.0, a typing bug fixed later).
find_python() {
  local min="$1" cand v best="" bestv=""
  for cand in python3.14 python3.13 python3.12 \
    "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.*/bin/python3 /usr/bin/python3.1[2-9]; do
    if [ "${cand#/}" = "$cand" ]; then cand="$(command -v "$cand" 2>/dev/null)" || continue; fi
    [ -x "$cand" ] || continue
    v="$("$cand" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null)" || continue
    [ "$(printf '%s\n%s\n' "$min" "$v" | sort -V | head -n1)" = "$min" ] || continue
    if [ -z "$bestv" ] || [ "$(printf '%s\n%s\n' "$bestv" "$v" | sort -V | tail -n1)" = "$v" ]; then
      best="$cand" bestv="$v"
    fi
  done
  [ -n "$best" ] && printf '%s' "$best"
}

for row in "${PYPI_CLIS[@]}"; do
  read -r pkg version bin minpy module flag <<<"$row"
  wanted "$bin" || continue
  dir="$CACHE/pypi-$pkg@$version"
  bindir="$dir/bin"
  exe="$bindir/$bin"
  if works "$exe" "$version" && "$dir/venv/bin/python" -c "import $module" 2>/dev/null; then
    log "$pkg==$version already installed ($exe)"
  else
    if ! py="$(find_python "$minpy")"; then
      log "SKIPPED $pkg==$version: it needs Python >= $minpy and none was found (PATH, pyenv, /usr/bin); the tests that drive '$bin' report it as not installed"
      continue
    fi
    log "installing $pkg==$version into $dir with $py ($("$py" --version 2>&1))"
    rm -rf "$dir"
    mkdir -p "$bindir"
    if ! "$py" -m venv "$dir/venv" >&2 ||
      ! "$dir/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$pkg==$version" >&2; then
      log "pip install of $pkg==$version failed"
      failed=1
      continue
    fi
    ln -sf "../venv/bin/$bin" "$exe"
    if ! "$dir/venv/bin/python" -c "import $module" >&2; then
      log "$pkg==$version installed but \`import $module\` fails with $py"
      failed=1
      continue
    fi
    if ! works "$exe" "$version"; then
      log "$exe does not answer '--version' with $version after install"
      failed=1
      continue
    fi
  fi
  log "$bin --version: $("${ISOLATE[@]}" "$exe" --version 2>/dev/null | head -n1)"
  if [ "${flag:-}" = "newest" ]; then
    add_newest "$bin" "$bindir"
    continue
  fi
  BIN_DIRS+=("$bindir")
done

[ "$failed" -eq 0 ] || die "some CLIs failed to install (see above)"

joined="$(IFS=:; printf '%s' "${BIN_DIRS[*]}")"
if [ "${#SELECTED[@]}" -eq 0 ]; then
  # Only a full run rewrites path.env, so a partial run never drops a directory from it.
  {
    printf 'export BRIDGE_CLI_PATH=%s\n' "$joined"
    [ "${#NEWEST[@]}" -eq 0 ] || printf '%s\n' "${NEWEST[@]}"
    [ "${#LIBS[@]}" -eq 0 ] || printf '%s\n' "${LIBS[@]}"
  } >"$CACHE/path.env"
  log "wrote $CACHE/path.env"
  cat "$CACHE/path.env"
else
  printf 'export BRIDGE_CLI_PATH=%s\n' "$joined"
  [ "${#LIBS[@]}" -eq 0 ] || printf '%s\n' "${LIBS[@]}"
fi
