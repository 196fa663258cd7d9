'use strict';
// Jest's node environment (what `testEnvironment: 'node'` names), which also ends, once a test file
// has ended, what the file started in its worker's process and had no way to end itself. A worker
// runs a hundred test files and more, one after the other, in one process:
//
// - jest-circus makes an AsyncLocalStorage for each test file (its test execution context) and
//   never disables it. Node 20 visits every enabled one each time an async resource (a promise, a
//   timer, a socket request) is made, so each `await` cost more with every file the worker had run:
//   100k awaits took 55 ms in a worker's first file and 340 ms in its fortieth.
// - Its stores (the running test, its closure) are kept by every async resource made in them, and
//   some of those live on: timers and histograms of Node's own, made once for the process. Each held
//   a test file's closures and, through them, everything the file had started and loaded.
// - prom-client's default metrics, which every gateway the tests start collects (GatewayMetrics),
//   observe the garbage collector (a PerformanceObserver) and sample the event loop's delay (a
//   histogram on a timer), and have no stop: each gateway's observer and timer outlived it, every
//   GC calling every observer, and the observers held their gateways.
//
// With these, a worker's heap grew past 1.5 GB over a run. Nothing here is read after its test file
// has ended; each is stopped with its own public method, and the stores are emptied.
const { AsyncLocalStorage } = require('node:async_hooks');
const perfHooks = require('node:perf_hooks');
const { TestEnvironment } = require('jest-environment-node');

/** What the running test file has started. */
const started = {
  /** AsyncLocalStorages enabled, and the stores they were given. */
  storages: new Set(),
  stores: new Set(),
  /** PerformanceObservers observing, and event-loop delay histograms sampling. */
  observers: new Set(),
  histograms: new Set(),
};

for (const method of ['run', 'enterWith']) {
  const original = AsyncLocalStorage.prototype[method];
  AsyncLocalStorage.prototype[method] = function (store, ...rest) {
    started.storages.add(this);
    if (typeof store === 'object' && store !== null) started.stores.add(store);
    return original.call(this, store, ...rest);
  };
}
const observe = perfHooks.PerformanceObserver.prototype.observe;
perfHooks.PerformanceObserver.prototype.observe = function (...args) {
  started.observers.add(this);
  return observe.apply(this, args);
};
const monitorEventLoopDelay = perfHooks.monitorEventLoopDelay;
perfHooks.monitorEventLoopDelay = function (...args) {
  const histogram = monitorEventLoopDelay.apply(this, args);
  started.histograms.add(histogram);
  return histogram;
};

class NodeEnvironment extends TestEnvironment {
  async teardown() {
    for (const storage of started.storages) storage.disable();
    for (const store of started.stores) for (const key of Reflect.ownKeys(store)) delete store[key];
    for (const observer of started.observers) observer.disconnect();
    for (const histogram of started.histograms) histogram.disable();
    for (const set of Object.values(started)) set.clear();
    await super.teardown();
  }
}

module.exports = NodeEnvironment;
