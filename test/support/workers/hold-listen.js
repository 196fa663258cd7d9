'use strict';
// Preloaded into a worker set's processes (NODE_OPTIONS="--require …/hold-listen.js"): the worker whose
// place in the set (GATEWAY_WORKER_INDEX) is HOLD_WORKER_INDEX is held just before it listens, whole
// but not serving, until it gets SIGUSR2. It prints "held worker N (pid P) before it listens" when it
// reaches that point. Every other process of the set runs as it would.
const cluster = require('node:cluster');
const net = require('node:net');

if (cluster.isWorker && process.env.GATEWAY_WORKER_INDEX === process.env.HOLD_WORKER_INDEX) {
  const listen = net.Server.prototype.listen;
  let released = false;
  const waiting = [];
  process.once('SIGUSR2', () => {
    released = true;
    for (const go of waiting.splice(0)) go();
  });
  net.Server.prototype.listen = function (...args) {
    if (released) return listen.apply(this, args);
    process.stdout.write(`held worker ${process.env.GATEWAY_WORKER_INDEX} (pid ${process.pid}) before it listens\n`);
    waiting.push(() => listen.apply(this, args));
    return this;
  };
}
