#!/bin/sh
# Fake ACP agent (JSON-RPC 2.0 over stdio, one message per line) for tests/faults.rs, posing
# as Copilot CLI (`copilot --acp --stdio`, found via COPILOT_CLI_PATH). Same interface as
# claude-stream-json.sh (see there); this file only says how ACP spells its lines:
#   initialize → result, authenticate → {}, session/new|load|resume → {sessionId},
#   session/prompt → `session/update` `agent_message_chunk` notifications, then the prompt's
#   response `{"stopReason":"end_turn"}` (the terminal event); `session/cancel` (a
#   notification) asks to interrupt: the prompt is answered with `cancelled`.
# The turn's result is the text of all its chunks (the response carries no text), so
# emit_result prints nothing but the response. Copilot reports retries as `Info: …` chunks.
# Every line the bridge sent is appended to FAKE_DIR/rpc; the session/prompt line is
# FAKE_DIR/request.

SID="${FAKE_SESSION_ID:-fake-acp-session-0001}"
FAKE_KEY_VAR=COPILOT_PROVIDER_API_KEY
PROMPT_ID=0

rpc_id() {
  # The request's id (numbers only; the bridge numbers its requests). A `"id":` inside a
  # string is escaped (`\"id\":`), so it cannot match.
  printf '%s\n' "$1" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p'
}
rpc_method() {
  printf '%s\n' "$1" | sed -n 's/.*"method":"\([^"]*\)".*/\1/p'
}
respond() {
  printf '{"jsonrpc":"2.0","id":%s,"result":%s}\n' "$1" "$2"
}
chunk() {
  printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"%s","content":{"type":"text","text":"%s"}}}}\n' "$SID" "$1" "$2"
}

emit_init() {
  :
}
emit_block_start() {
  :
}
delta_line_prefix() {
  printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"' "$SID"
}
delta_line_suffix() {
  printf '"}}}}'
}
emit_delta() {
  chunk agent_message_chunk "$1"
}
emit_result() {
  respond "$PROMPT_ID" '{"stopReason":"end_turn"}'
}
emit_interrupted() {
  respond "$PROMPT_ID" '{"stopReason":"cancelled"}'
}
# An agent whose model call failed for good answers session/prompt with a JSON-RPC error.
emit_api_error() {
  printf '{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"Internal error","data":{"details":"%s"}}}\n' "$PROMPT_ID" "$1"
}
emit_tool() {
  printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"tool_call","toolCallId":"%s","title":"echo %s","kind":"execute","status":"pending","rawInput":{"command":"echo %s"}}}}\n' "$SID" "$1" "$2" "$2"
  printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"tool_call_update","toolCallId":"%s","status":"completed","content":[{"type":"content","content":{"type":"text","text":"%s"}}]}}}\n' "$SID" "$1" "$2"
}
emit_retry() {
  chunk agent_message_chunk "Info: Retrying the request (attempt $1)..."
}
read_request() {
  # The handshake, up to and including session/prompt. `head -n 1` reads one line fast (a
  # 10 MiB prompt); the bridge waits for each answer, so nothing is read ahead.
  while :; do
    line="$(head -n 1)"
    [ -n "$line" ] || exit 0
    printf '%s\n' "$line" >> "$FAKE_DIR/rpc"
    id="$(rpc_id "$line")"
    case "$(rpc_method "$line")" in
      initialize)
        respond "$id" '{"protocolVersion":1,"agentCapabilities":{"loadSession":true},"authMethods":[],"agentInfo":{"name":"fake-acp","version":"0.0.1"}}'
        ;;
      session/load)
        # A load replays the conversation first (an empty replay means an unknown session).
        printf '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"%s","update":{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"earlier"}}}}\n' "$SID"
        respond "$id" "{\"sessionId\":\"$SID\"}"
        ;;
      session/new|session/resume)
        respond "$id" "{\"sessionId\":\"$SID\"}"
        ;;
      session/prompt)
        printf '%s\n' "$line" > "$FAKE_DIR/request"
        PROMPT_ID="$id"
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
    *'"session/cancel"'*) return 0 ;;
    *) return 1 ;;
  esac
}
await_stdin_eof() {
  cat > /dev/null
}

# One process for a whole conversation (the `session` scenario).
WARM=1
. "$(dirname "$0")/lib.sh"
