// Conformance of `bridge acp <provider>` on the official ACP TypeScript SDK
// (@agentclientprotocol/sdk, its ClientSideConnection; pinned in tests/install-clis.sh).
//
// Usage: node acp_conformance.mjs <sdk prefix> <cwd> <agent command...>
//
// Runs the handshake, a text turn, a mode change, a turn with an approval (allowed), and a
// cancelled turn, then closes the session (session/close); checks every message the agent
// sends against the SDK's zod schemas; prints
// one JSON report on stdout. Run by tests/acp_agent.rs, which makes the assertions.

import { spawn } from "node:child_process";
import path from "node:path";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";

const [sdkPrefix, cwd, ...agent] = process.argv.slice(2);
const sdkRoot = path.join(sdkPrefix, "node_modules", "@agentclientprotocol", "sdk");
const acp = await import(pathToFileURL(path.join(sdkRoot, "dist", "acp.js")).href);
const schemas = await import(pathToFileURL(path.join(sdkRoot, "dist", "schema", "zod.gen.js")).href);

const child = spawn(agent[0], agent.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve({ code, signal })));
const stream = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));

const report = { failures: [], checked: 0, updates: [], usage: [], permissions: [], stopReasons: [], texts: [] };
function check(name, value) {
  const schema = schemas[name];
  if (!schema) {
    report.failures.push(`no schema ${name} in the SDK`);
    return;
  }
  const result = schema.safeParse(value);
  report.checked += 1;
  if (!result.success) {
    report.failures.push(`${name}: ${result.error.message} in ${JSON.stringify(value)}`);
  }
}

let text = "";
let firstChunk = null;
const client = {
  async sessionUpdate(params) {
    check("zSessionNotification", params);
    const update = params.update;
    report.updates.push(update.sessionUpdate);
    if (update.sessionUpdate === "usage_update") {
      check("zUsageUpdate", update);
      report.usage.push({ used: update.used, size: update.size, cost: update.cost ?? null });
    }
    if (update.sessionUpdate === "agent_message_chunk" && update.content.type === "text") {
      text += update.content.text;
      if (firstChunk) {
        firstChunk();
        firstChunk = null;
      }
    }
  },
  async requestPermission(params) {
    check("zRequestPermissionRequest", params);
    report.permissions.push({
      kinds: params.options.map((o) => o.kind),
      toolKind: params.toolCall.kind ?? null,
    });
    const allow = params.options.find((o) => o.kind === "allow_once");
    return { outcome: { outcome: "selected", optionId: allow.optionId } };
  },
  async readTextFile() {
    throw acp.RequestError.methodNotFound("fs/read_text_file");
  },
  async writeTextFile() {
    throw acp.RequestError.methodNotFound("fs/write_text_file");
  },
};

const connection = new acp.ClientSideConnection(() => client, stream);
async function turn(sessionId, message) {
  text = "";
  const response = await connection.prompt({ sessionId, prompt: [{ type: "text", text: message }] });
  check("zPromptResponse", response);
  report.stopReasons.push(response.stopReason);
  report.texts.push(text);
  return response;
}

try {
  const started = Date.now();
  const init = await connection.initialize({
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  });
  check("zInitializeResponse", init);
  report.initialize = init;
  const session = await connection.newSession({ cwd, mcpServers: [] });
  check("zNewSessionResponse", session);
  report.newSessionMs = Date.now() - started;
  report.modes = (session.modes?.availableModes ?? []).map((m) => m.id);
  const id = session.sessionId;

  await turn(id, "MOCK:text hello");
  check("zSetSessionModeResponse", (await connection.setSessionMode({ sessionId: id, modeId: "acceptEdits" })) ?? {});
  check("zSetSessionModeResponse", (await connection.setSessionMode({ sessionId: id, modeId: "default" })) ?? {});
  try {
    await connection.setSessionMode({ sessionId: id, modeId: "no-such-mode" });
    report.failures.push("an unknown mode was accepted");
  } catch (error) {
    report.unknownModeError = error.code ?? String(error);
  }
  await turn(id, "MOCK:danger make a file");

  // Cancel once the answer streams.
  const streaming = new Promise((resolve) => {
    firstChunk = resolve;
  });
  const slow = turn(id, "MOCK:slow count");
  await streaming;
  await connection.cancel({ sessionId: id });
  await slow;
  report.cancelledChunks = text.split(" ").filter(Boolean).length;

  // session/close ends the session: a prompt naming it afterwards is refused.
  check("zCloseSessionResponse", (await connection.closeSession({ sessionId: id })) ?? {});
  try {
    await connection.prompt({ sessionId: id, prompt: [{ type: "text", text: "MOCK:text hi" }] });
    report.failures.push("a closed session took a prompt");
  } catch (error) {
    report.closedSessionError = error.code ?? String(error);
  }
} catch (error) {
  report.failures.push(`error: ${error?.message ?? JSON.stringify(error)}`);
}

// Closing stdin ends the agent and everything it started.
const closing = Date.now();
child.stdin.end();
const timer = setTimeout(() => child.kill("SIGKILL"), 30000);
report.exit = await exited;
report.exitMs = Date.now() - closing;
clearTimeout(timer);
console.log(JSON.stringify(report));
process.exit(0);
