#!/usr/bin/env node
// Drop-in shim for plugins that can only launch `node <dir>/channel-manager.js <provider> <command>`
// (the JetBrains plugin's ai-bridge contract): it runs the native `bridge` binary with the same
// arguments, passes stdin/stdout/stderr straight through, forwards termination signals and exits
// with the bridge's exit code. Install: copy this file into a directory that also contains an
// (empty) `node_modules/` directory (the plugin checks for both) and either put `bridge` next to it,
// on PATH, or set BRIDGE_BIN. Point the plugin at that directory with CLAUDE_BRIDGE_PATH.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const path = require('path');

function findBridge() {
  if (process.env.BRIDGE_BIN) return process.env.BRIDGE_BIN;
  const local = path.join(__dirname, process.platform === 'win32' ? 'bridge.exe' : 'bridge');
  return fs.existsSync(local) ? local : 'bridge';
}

const child = spawn(findBridge(), process.argv.slice(2), { stdio: 'inherit' });
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => child.kill(signal));
}
child.on('error', (err) => {
  process.stdout.write(JSON.stringify({ success: false, error: `cannot start bridge: ${err.message} (set BRIDGE_BIN)` }) + '\n');
  process.exit(1);
});
child.on('exit', (code, signal) => process.exit(code === null ? 128 + (signal === 'SIGKILL' ? 9 : 15) : code));
