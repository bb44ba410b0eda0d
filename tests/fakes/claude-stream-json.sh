#!/bin/sh
# Fake Claude Code CLI (`claude --input-format stream-json --output-format stream-json …`)
# for tests/faults.rs. It speaks just enough stream-json for the bridge's Claude engine and
# misbehaves on demand: the scenario (FAKE_SCENARIO) and everything it records (FAKE_DIR) are
# shared by every engine's fake through lib.sh; this file only says how this engine spells
# its lines. Never prints or needs anything outside FAKE_DIR.
#
# Engine interface lib.sh relies on (a new engine's fake defines the same functions):
#   emit_init                 first line of a turn (carries the session id)
#   emit_block_start          a new assistant message begins
#   emit_delta TEXT           one streamed text piece (TEXT is JSON-string safe)
#   emit_result TEXT          the provider's own successful terminal event
#   emit_interrupted          what the CLI prints after a graceful interrupt (terminal event)
#   emit_api_error MESSAGE    what the CLI prints when the model API failed for good
#   emit_tool ID TEXT         a tool call and its result (TEXT in both)
#   emit_retry N              a "retrying the API" status line
#   delta_line_prefix / delta_line_suffix
#                             the text around a delta's TEXT (for sed-made floods, huge lines)
#   read_request              consume the request from stdin, keep a copy in FAKE_DIR/request
#   is_interrupt LINE         true when a later stdin line asks to interrupt
#   await_stdin_eof           what the CLI does after its terminal event (claude: exit on EOF)

SID="${FAKE_SESSION_ID:-fake-session-0001}"

emit_init() {
  printf '{"type":"system","subtype":"init","session_id":"%s","tools":[],"model":"fake-model","permissionMode":"default"}\n' "$SID"
}
emit_block_start() {
  printf '{"type":"stream_event","event":{"type":"message_start","message":{"id":"msg_fake_%s","usage":{"input_tokens":1}}},"session_id":"%s","parent_tool_use_id":null}\n' "$$" "$SID"
}
delta_line_prefix() {
  printf '{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"'
}
delta_line_suffix() {
  printf '"}},"session_id":"%s","parent_tool_use_id":null}' "$SID"
}
emit_delta() {
  printf '%s%s%s\n' "$(delta_line_prefix)" "$1" "$(delta_line_suffix)"
}
emit_result() {
  printf '{"type":"result","subtype":"success","is_error":false,"result":"%s","stop_reason":"end_turn","session_id":"%s","usage":{"input_tokens":1,"output_tokens":2,"cache_read_input_tokens":0,"cache_creation_input_tokens":0}}\n' "$1" "$SID"
}
emit_interrupted() {
  printf '{"type":"control_response","response":{"subtype":"success","request_id":"bridge-interrupt"}}\n'
  printf '{"type":"user","message":{"role":"user","content":[{"type":"text","text":"[Request interrupted by user]"}]},"parent_tool_use_id":null,"session_id":"%s"}\n' "$SID"
  printf '{"type":"result","subtype":"error_during_execution","is_error":true,"stop_reason":null,"session_id":"%s"}\n' "$SID"
}
# What Claude Code prints when the API fails for good (`result` with is_error).
emit_api_error() {
  printf '{"type":"result","subtype":"success","is_error":true,"api_error_status":500,"result":"API Error: %s","stop_reason":"stop_sequence","session_id":"%s","usage":{"input_tokens":0,"output_tokens":0}}\n' "$1" "$SID"
}
emit_tool() {
  printf '{"type":"assistant","message":{"id":"msg_fake_tool","role":"assistant","content":[{"type":"tool_use","id":"%s","name":"Bash","input":{"command":"echo %s"}}]},"session_id":"%s","parent_tool_use_id":null}\n' "$1" "$2" "$SID"
  printf '{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"%s","content":"%s","is_error":false}]},"session_id":"%s","parent_tool_use_id":null}\n' "$1" "$2" "$SID"
}
emit_retry() {
  printf '{"type":"system","subtype":"api_retry","attempt":%s,"max_retries":10,"retry_delay_ms":100,"error_status":529,"error":"overloaded","session_id":"%s"}\n' "$1" "$SID"
}
read_request() {
  # The request is one stream-json user message line. `head -n 1` is fast for a 10 MiB line
  # (dash's `read` goes byte by byte), but may swallow what follows the line in the pipe: only
  # the first request, which nothing follows, is read with it. Later ones (a warm process's
  # next turns) are read a line at a time, skipping the control requests the bridge sends
  # between messages (its plan-mode settings), which Claude Code answers apart from turns.
  if [ -z "${READ_BEFORE:-}" ]; then
    READ_BEFORE=1
    head -n 1 > "$FAKE_DIR/request"
    return
  fi
  while IFS= read -r line; do
    case "$line" in
      *'"type":"control_request"'*) continue ;;
    esac
    printf '%s\n' "$line" > "$FAKE_DIR/request"
    return
  done
  : > "$FAKE_DIR/request"
}
is_interrupt() {
  case "$1" in
    *'"control_request"'*'"interrupt"'*) return 0 ;;
    *) return 1 ;;
  esac
}
await_stdin_eof() {
  cat > /dev/null
}

# One process for a whole conversation (the `session` scenario).
WARM=1
. "$(dirname "$0")/lib.sh"
