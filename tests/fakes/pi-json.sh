#!/bin/sh
# Fake pi CLI (`pi --print --mode json …`, the prompt on stdin, which the bridge closes right
# after it) for tests/faults.rs, standing for the one-shot engine (`run_process_turn` + a
# normalizer; pi's is engines/pi-family/src/normalize.rs). Same interface as claude-stream-json.sh
# (see there); this file only says how pi spells its lines (captures: shared/captures/pi-*.stdout):
#   session{id} agent_start turn_start message_start{assistant}
#   message_update{assistantMessageEvent:text_delta} … message_end{assistant, stopReason}
#   turn_end agent_end
# The turn's result is the text of the last assistant `message_end`; `agent_end` ends the
# run. Retries are `auto_retry_start` lines. There is no interrupt message (stdin is closed):
# the bridge interrupts with signals. The real pi repeats the whole partial message in every
# `message_update`; the fake leaves it out (the normalizer never reads it).

SID="${FAKE_SESSION_ID:-fake-pi-session-0001}"
FAKE_KEY_VAR=OPENAI_API_KEY

emit_init() {
  printf '{"type":"session","version":3,"id":"%s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"%s"}\n' "$SID" "$(pwd)"
  printf '{"type":"agent_start"}\n'
  printf '{"type":"turn_start"}\n'
}
emit_block_start() {
  printf '{"type":"message_start","message":{"role":"assistant","content":[],"api":"openai-completions","provider":"fake","model":"fake-model","stopReason":"stop"}}\n'
}
delta_line_prefix() {
  printf '{"type":"message_update","assistantMessageEvent":{"type":"text_delta","contentIndex":0,"delta":"'
}
delta_line_suffix() {
  printf '"}}'
}
emit_delta() {
  printf '%s%s%s\n' "$(delta_line_prefix)" "$1" "$(delta_line_suffix)"
}
# The end of an assistant message: $1 stop reason, $2 text, $3 error message (or empty).
assistant_end() {
  if [ -n "$3" ]; then error=",\"errorMessage\":\"$3\""; else error=''; fi
  message="{\"role\":\"assistant\",\"content\":[{\"type\":\"text\",\"text\":\"$2\"}],\"usage\":{\"input\":1,\"output\":2,\"cacheRead\":0,\"cacheWrite\":0,\"totalTokens\":3,\"cost\":{\"total\":0}},\"stopReason\":\"$1\"$error}"
  printf '{"type":"message_end","message":%s}\n' "$message"
  printf '{"type":"turn_end","message":%s,"toolResults":[]}\n' "$message"
  printf '{"type":"agent_end","messages":[]}\n'
}
emit_result() {
  assistant_end stop "$1" ''
}
emit_interrupted() {
  assistant_end aborted '' 'Request was aborted'
}
# What pi prints when the API fails for good (and then it exits 0).
emit_api_error() {
  assistant_end error '' "$1"
}
emit_tool() {
  printf '{"type":"tool_execution_start","toolCallId":"%s","toolName":"bash","args":{"command":"echo %s"}}\n' "$1" "$2"
  printf '{"type":"tool_execution_end","toolCallId":"%s","toolName":"bash","result":{"content":[{"type":"text","text":"%s"}]},"isError":false}\n' "$1" "$2"
}
emit_retry() {
  printf '{"type":"auto_retry_start","attempt":%s,"maxAttempts":1000,"delayMs":100,"errorMessage":"529 overloaded"}\n' "$1"
}
read_request() {
  # The whole of stdin is the prompt (pi reads piped stdin to EOF).
  cat > "$FAKE_DIR/request"
}
is_interrupt() {
  return 1
}
await_stdin_eof() {
  cat > /dev/null
}

. "$(dirname "$0")/lib.sh"
