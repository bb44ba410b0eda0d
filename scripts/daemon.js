#!/usr/bin/env node
// Drop-in shim for plugins that launch `node <dir>/daemon.js` (the JetBrains plugin's warm
// path, `DaemonBridge.java`): it runs `bridge daemon` through `channel-manager.js`, which must
// sit in the same directory, with stdin/stdout/stderr passed straight through, termination
// signals forwarded and the bridge's exit code returned. The bridge daemon also exits on its
// own when this process dies (it watches its parent) or when stdin closes.
//
// Like channel-manager.js it runs unchanged as CommonJS and as an ES module.
'use strict';

globalThis.__bridgeShimArgs = ['daemon'];
Promise.all([import('node:path'), import('node:url')])
  .then(([path, url]) => {
    const here = path.dirname(path.resolve(process.argv[1] || '.'));
    return import(url.pathToFileURL(path.join(here, 'channel-manager.js')).href);
  })
  .catch((err) => {
    process.stdout.write(JSON.stringify({ type: 'daemon', event: 'startup_failed', error: `daemon shim failed: ${err && err.message} (channel-manager.js must be next to daemon.js)` }) + '\n');
    process.exit(1);
  });
