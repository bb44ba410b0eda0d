// A small MCP server over stdio for tests/mcp.rs, speaking newline-delimited JSON-RPC as the
// MCP stdio transport does. The first argument picks its behaviour:
//   healthy  answers initialize (serverInfo stdio-fixture 1.2.3), tools/list (echo, add), ping
//   silent   reads every line and never answers
//   crash    writes a line to stderr (with $FIXTURE_TOKEN in it) and exits with code 3
// With MCP_FIXTURE_ENV_DUMP set, it first writes its environment there as JSON.
import { writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const mode = process.argv[2] ?? 'healthy';
if (process.env.MCP_FIXTURE_ENV_DUMP) {
  writeFileSync(process.env.MCP_FIXTURE_ENV_DUMP, JSON.stringify(process.env));
}
if (mode === 'crash') {
  process.stderr.write(`fixture crashed on purpose, token=${process.env.FIXTURE_TOKEN ?? ''}\n`);
  process.exit(3);
}

const tools = [
  {
    name: 'echo',
    description: 'Echo the text back',
    inputSchema: {
      type: 'object',
      properties: { text: { type: 'string', description: 'what to echo' } },
      required: ['text'],
    },
  },
  {
    name: 'add',
    description: 'Add two numbers',
    inputSchema: {
      type: 'object',
      properties: { a: { type: 'number' }, b: { type: 'number' } },
      required: ['a', 'b'],
    },
  },
];

function answer(message) {
  switch (message.method) {
    case 'initialize':
      return {
        protocolVersion: message.params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: {} },
        serverInfo: { name: 'stdio-fixture', version: '1.2.3' },
      };
    case 'tools/list':
      return { tools };
    case 'ping':
      return {};
    default:
      return undefined;
  }
}

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  if (mode === 'silent' || !line.trim()) return;
  let message;
  try {
    message = JSON.parse(line);
  } catch {
    return;
  }
  if (message.id === undefined || !message.method) return;
  const result = answer(message);
  const reply = result === undefined
    ? { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: `no method ${message.method}` } }
    : { jsonrpc: '2.0', id: message.id, result };
  process.stdout.write(JSON.stringify(reply) + '\n');
});
lines.on('close', () => process.exit(0));
