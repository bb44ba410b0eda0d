#!/usr/bin/env python3
"""A misbehaving (or well-behaved) fake ACP agent for the engine tests.

usage: fake_agent.py <behaviour>
  silent         reads stdin, never answers anything
  garbage        prints lines that are not JSON-RPC, never answers
  bad-init       answers initialize with a result that is not an object
  die-mid-prompt answers the handshake, streams one chunk, writes to stderr, exits 3
  hang-in-prompt answers the handshake, streams one chunk, then stays silent
  huge-line      prints a 2 MB line during the prompt, then ends the turn normally
  fs-request     asks the client for fs/read_text_file during the prompt, reports the answer
  ok             a normal turn: one chunk, end_turn
  load-history   advertises loadSession; session/load replays one user message, then a normal turn
  load-empty     advertises loadSession; session/load replays nothing (a fresh session, as Qwen
                 Code does for an unknown id)
"""
import json
import sys
import time

mode = sys.argv[1]


def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def chunk(sid, text):
    send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
        "sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}}})


if mode == "garbage":
    for i in range(10000):
        print(f"this is not JSON-RPC, line {i}", flush=True)
        time.sleep(0.05)
    sys.exit(0)

pending = {}
for line in sys.stdin:
    msg = json.loads(line)
    method, mid = msg.get("method"), msg.get("id")
    if mode == "silent":
        continue
    if method is None:  # a response to our own request
        pending["answer"] = msg
        continue
    if method == "initialize":
        if mode == "bad-init":
            send({"jsonrpc": "2.0", "id": mid, "result": "banana"})
            continue
        caps = {"loadSession": True} if mode.startswith("load-") else {}
        send({"jsonrpc": "2.0", "id": mid, "result": {"protocolVersion": 1, "agentCapabilities": caps, "authMethods": []}})
    elif method == "session/load":
        sid = msg["params"]["sessionId"]
        if mode == "load-history":
            send({"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": sid, "update": {
                "sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "earlier"}}}})
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
    elif method == "session/new":
        send({"jsonrpc": "2.0", "id": mid, "result": {"sessionId": "fake-1"}})
    elif method == "session/prompt":
        sid = msg["params"]["sessionId"]
        chunk(sid, "partial ")
        if mode == "die-mid-prompt":
            sys.stderr.write("fake agent: simulated crash\n")
            sys.stderr.flush()
            sys.exit(3)
        if mode == "hang-in-prompt":
            time.sleep(600)
        if mode == "huge-line":
            sys.stdout.write("x" * 2_000_000 + "\n")
            sys.stdout.flush()
        if mode == "fs-request":
            send({"jsonrpc": "2.0", "id": "fs1", "method": "fs/read_text_file",
                  "params": {"sessionId": sid, "path": "/etc/hostname"}})
            answer = json.loads(sys.stdin.readline())
            code = answer.get("error", {}).get("code")
            chunk(sid, f"client answered fs with error {code}")
        else:
            chunk(sid, "done")
        send({"jsonrpc": "2.0", "id": mid, "result": {"stopReason": "end_turn"}})
    elif mid is not None:
        send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "unknown"}})
