#!/usr/bin/env node
// Drop-in shim for plugins that can only launch `node <dir>/channel-manager.js <provider> <command>`
// (the JetBrains plugin's ai-bridge contract): it runs the native `bridge` binary with the same
// arguments, passes stdin/stdout/stderr straight through, forwards termination signals and exits
// with the bridge's exit code. Install: copy this file into a directory that also contains an
// (empty) `node_modules/` directory (the plugin checks for both) and either put `bridge` next to it,
// on PATH, or set BRIDGE_BIN. Point the plugin at that directory with CLAUDE_BRIDGE_PATH.
//
// The file runs unchanged as CommonJS and as an ES module (the plugin's own bridge directory has a
// package.json with "type":"module"): it uses no `require`, no `import` statement, no
// `__dirname` and no top-level await, only dynamic `import()` of Node built-ins and `process`.
'use strict';

Promise.all([import('node:child_process'), import('node:fs'), import('node:path')])
  .then(([childProcess, fs, path]) => {
    const findBridge = () => {
      if (process.env.BRIDGE_BIN) return process.env.BRIDGE_BIN;
      // process.argv[1] is this script's path in both module systems.
      const here = path.dirname(path.resolve(process.argv[1] || '.'));
      const local = path.join(here, process.platform === 'win32' ? 'bridge.exe' : 'bridge');
      return fs.existsSync(local) ? local : 'bridge';
    };
    // `daemon.js` sets the leading arguments (`daemon`) before it loads this file.
    const leading = Array.isArray(globalThis.__bridgeShimArgs) ? globalThis.__bridgeShimArgs : [];
    const child = childProcess.spawn(findBridge(), leading.concat(process.argv.slice(2)), { stdio: 'inherit' });
    for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
      process.on(signal, () => child.kill(signal));
    }
    child.on('error', (err) => {
      process.stdout.write(JSON.stringify({ success: false, error: `cannot start bridge: ${err.message} (set BRIDGE_BIN)` }) + '\n');
      process.exit(1);
    });
    child.on('exit', (code, signal) => process.exit(code === null ? 128 + (signal === 'SIGKILL' ? 9 : 15) : code));
  })
  .catch((err) => {
    process.stdout.write(JSON.stringify({ success: false, error: `channel-manager shim failed: ${err && err.message}` }) + '\n');
    process.exit(1);
  });
