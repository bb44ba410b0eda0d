// A minimal MCP server on stdio (newline-delimited JSON-RPC) for tests/acp_agent.rs: one
// tool, `echo`, so a test can see that a CLI started it and offers its tool to the model.

import { appendFileSync } from "node:fs";
import { createInterface } from "node:readline";

// MCP_PROBE_LOG: a file that gets each request's method (what the CLI asked).
const log = (method) => process.env.MCP_PROBE_LOG && appendFileSync(process.env.MCP_PROBE_LOG, `${method}\n`);

const send = (message) => process.stdout.write(`${JSON.stringify({ jsonrpc: "2.0", ...message })}\n`);
const tools = [
  {
    name: "echo",
    description: "Echoes its text",
    inputSchema: { type: "object", properties: { text: { type: "string" } } },
  },
];

createInterface({ input: process.stdin }).on("line", (line) => {
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  // Notifications (`notifications/initialized`, …) need no answer.
  if (message.id === undefined || message.id === null) return;
  const { id, method, params } = message;
  log(method);
  if (method === "initialize") {
    send({
      id,
      result: {
        protocolVersion: params?.protocolVersion ?? "2025-06-18",
        capabilities: { tools: {} },
        serverInfo: { name: "mcp-probe", version: "1.0.0" },
      },
    });
  } else if (method === "tools/list") {
    send({ id, result: { tools } });
  } else if (method === "tools/call") {
    send({ id, result: { content: [{ type: "text", text: String(params?.arguments?.text ?? "") }] } });
  } else if (method === "ping") {
    send({ id, result: {} });
  } else {
    send({ id, error: { code: -32601, message: `method not found: ${method}` } });
  }
});
