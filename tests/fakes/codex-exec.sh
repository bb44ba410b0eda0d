#!/bin/sh
# Fake Codex CLI (`codex exec --json … -- <prompt>`, stdin /dev/null; a prompt over 100 KiB
# comes as `-- -` on a pipe) for tests/faults.rs. Same interface as claude-stream-json.sh
# (see there); this file only says how `codex exec --json` spells its lines
# (captures: shared/captures/codex-*.stdout):
#   thread.started{thread_id} turn.started item.completed{agent_message} turn.completed{usage}
# Codex has no text deltas: every emit_delta is one whole `agent_message` item, and the
# turn's result is its last agent message (so emit_result prints one more, as Codex does).
# There is no interrupt message (stdin is null): the bridge interrupts with signals.

SID="${FAKE_SESSION_ID:-fake-thread-0001}"
FAKE_KEY_VAR=CODEX_API_KEY
for LAST_ARG in "$@"; do :; done
ITEM=0

emit_init() {
  printf '{"type":"thread.started","thread_id":"%s"}\n' "$SID"
  printf '{"type":"turn.started"}\n'
}
emit_block_start() {
  :
}
delta_line_prefix() {
  printf '{"type":"item.completed","item":{"id":"item_flood","type":"agent_message","text":"'
}
delta_line_suffix() {
  printf '"}}'
}
emit_delta() {
  ITEM=$((ITEM + 1))
  printf '{"type":"item.completed","item":{"id":"item_%s","type":"agent_message","text":"%s"}}\n' "$ITEM" "$1"
}
emit_result() {
  emit_delta "$1"
  printf '{"type":"turn.completed","usage":{"input_tokens":1,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":2,"reasoning_output_tokens":0}}\n'
}
emit_interrupted() {
  printf '{"type":"turn.failed","error":{"message":"interrupted"}}\n'
}
# What `codex exec --json` prints when the API fails for good.
emit_api_error() {
  printf '{"type":"error","message":"%s"}\n' "$1"
  printf '{"type":"turn.failed","error":{"message":"%s"}}\n' "$1"
}
emit_tool() {
  ITEM=$((ITEM + 1))
  printf '{"type":"item.started","item":{"id":"item_%s","type":"command_execution","command":"echo %s","aggregated_output":"","exit_code":null,"status":"in_progress"}}\n' "$ITEM" "$2"
  printf '{"type":"item.completed","item":{"id":"item_%s","type":"command_execution","command":"echo %s","aggregated_output":"%s","exit_code":0,"status":"completed"}}\n' "$ITEM" "$2" "$2"
}
emit_retry() {
  printf '{"type":"error","message":"Reconnecting... %s/5 (overloaded)"}\n' "$1"
}
read_request() {
  # The prompt is the last argument, or stdin when that argument is `-`.
  if [ "${LAST_ARG:-}" = - ]; then
    cat > "$FAKE_DIR/request"
  else
    printf '%s' "${LAST_ARG:-}" > "$FAKE_DIR/request"
  fi
}
is_interrupt() {
  return 1
}
await_stdin_eof() {
  cat > /dev/null
}

. "$(dirname "$0")/lib.sh"
