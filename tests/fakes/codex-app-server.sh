#!/bin/sh
# Fake `codex app-server` (JSON-RPC over stdio without the `jsonrpc` member, one message per
# line) for tests/faults.rs, found via CODEX_PATH. Same interface as claude-stream-json.sh (see
# there); this file only says how the app-server spells its lines (project captures
# tests/corpus/codex/0.171.0/appserver-*.jsonl):
#   initialize → {userAgent,…}, `initialized` (a notification), thread/start|resume →
#   {thread:{id}}, turn/start → {turn:{id,status:"inProgress"}}, then `item/agentMessage/delta`
#   notifications, `item/completed` {agentMessage}, `turn/completed` {turn:{status}} (the
#   terminal event); `turn/interrupt` (a request) asks to interrupt: it is answered `{}` and
#   the turn completes as `interrupted`.
# The turn's result is its last agent message (emit_result streams one more piece and
# completes that item). Every line the bridge sent is appended to FAKE_DIR/rpc; the turn/start
# line is FAKE_DIR/request.

SID="${FAKE_SESSION_ID:-fake-thread-0002}"
FAKE_KEY_VAR=CODEX_API_KEY
TURN=turn-0
INTERRUPT_ID=

rpc_id() {
  printf '%s\n' "$1" | sed -n 's/^{"id":\([0-9][0-9]*\).*/\1/p'
}
rpc_method() {
  printf '%s\n' "$1" | sed -n 's/.*"method":"\([^"]*\)".*/\1/p'
}
respond() {
  printf '{"id":%s,"result":%s}\n' "$1" "$2"
}
completed() {
  printf '{"method":"turn/completed","params":{"threadId":"%s","turn":{"id":"%s","items":[],"status":"%s"%s}}}\n' "$SID" "$TURN" "$1" "${2:-}"
}

emit_init() {
  printf '{"method":"turn/started","params":{"threadId":"%s","turn":{"id":"%s","items":[],"status":"inProgress"}}}\n' "$SID" "$TURN"
}
emit_block_start() {
  :
}
delta_line_prefix() {
  printf '{"method":"item/agentMessage/delta","params":{"threadId":"%s","turnId":"%s","itemId":"msg_1","delta":"' "$SID" "$TURN"
}
delta_line_suffix() {
  printf '"}}'
}
emit_delta() {
  printf '%s%s%s\n' "$(delta_line_prefix)" "$1" "$(delta_line_suffix)"
}
emit_result() {
  printf '{"method":"item/agentMessage/delta","params":{"threadId":"%s","turnId":"%s","itemId":"msg_r","delta":"%s"}}\n' "$SID" "$TURN" "$1"
  printf '{"method":"item/completed","params":{"threadId":"%s","turnId":"%s","item":{"type":"agentMessage","id":"msg_r","text":"%s"}}}\n' "$SID" "$TURN" "$1"
  printf '{"method":"thread/tokenUsage/updated","params":{"threadId":"%s","turnId":"%s","tokenUsage":{"total":{"totalTokens":3,"inputTokens":1,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":2,"reasoningOutputTokens":0},"last":{"totalTokens":3,"inputTokens":1,"cachedInputTokens":0,"cacheWriteInputTokens":0,"outputTokens":2,"reasoningOutputTokens":0}}}}\n' "$SID" "$TURN"
  completed completed
}
emit_interrupted() {
  if [ -n "$INTERRUPT_ID" ]; then respond "$INTERRUPT_ID" '{}'; fi
  completed interrupted
}
# What the app-server sends when the API fails for good: an `error` notification, then the
# failed turn with the same error.
emit_api_error() {
  printf '{"method":"error","params":{"threadId":"%s","turnId":"%s","willRetry":false,"error":{"message":"%s"}}}\n' "$SID" "$TURN" "$1"
  completed failed ",\"error\":{\"message\":\"$1\"}"
}
emit_tool() {
  printf '{"method":"item/started","params":{"threadId":"%s","turnId":"%s","item":{"type":"commandExecution","id":"%s","command":"echo %s","cwd":"/","status":"inProgress","commandActions":[]}}}\n' "$SID" "$TURN" "$1" "$2"
  printf '{"method":"item/completed","params":{"threadId":"%s","turnId":"%s","item":{"type":"commandExecution","id":"%s","command":"echo %s","cwd":"/","status":"completed","commandActions":[],"aggregatedOutput":"%s","exitCode":0}}}\n' "$SID" "$TURN" "$1" "$2" "$2"
}
emit_retry() {
  printf '{"method":"error","params":{"threadId":"%s","turnId":"%s","willRetry":true,"error":{"message":"Reconnecting... %s/5 (overloaded)"}}}\n' "$SID" "$TURN" "$1"
}
OPENED=
read_request() {
  # The handshake (first turn only), then turn/start. The bridge sends `initialized` and
  # thread/start back to back, so the handshake is read with `read` (which never reads past a
  # line); afterwards `head -n 1` reads one line fast (a 10 MiB prompt), and the bridge waits
  # for the turn to end before it sends the next one, so nothing is read ahead.
  while :; do
    if [ -n "$OPENED" ]; then
      line="$(head -n 1)"
    else
      IFS= read -r line || exit 0
    fi
    [ -n "$line" ] || exit 0
    printf '%s\n' "$line" >> "$FAKE_DIR/rpc"
    id="$(rpc_id "$line")"
    case "$(rpc_method "$line")" in
      initialize)
        respond "$id" '{"userAgent":"fake/0.171.0","codexHome":"/nonexistent","platformFamily":"unix","platformOs":"linux"}'
        ;;
      thread/start|thread/resume)
        OPENED=1
        respond "$id" "{\"thread\":{\"id\":\"$SID\"}}"
        ;;
      turn/start)
        printf '%s\n' "$line" > "$FAKE_DIR/request"
        TURN="turn-$id"
        INTERRUPT_ID=
        respond "$id" "{\"turn\":{\"id\":\"$TURN\",\"items\":[],\"status\":\"inProgress\"}}"
        return 0
        ;;
      *)
        if [ -n "$id" ]; then respond "$id" '{}'; fi
        ;;
    esac
  done
}
is_interrupt() {
  case "$1" in
    *'"turn/interrupt"'*)
      INTERRUPT_ID="$(rpc_id "$1")"
      return 0
      ;;
    *) return 1 ;;
  esac
}
await_stdin_eof() {
  cat > /dev/null
}

# One process for a whole conversation (the `session` scenario).
WARM=1
. "$(dirname "$0")/lib.sh"
