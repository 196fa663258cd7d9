import 'reflect-metadata';
import cluster from 'node:cluster';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError, loadConfig } from './config/config';
import { SessionTokens } from './dashboard/session/sessions';
import { startSimulatedUpstream } from './simulated-upstream/simulated-upstream';
import { answerPrimaryGathering } from './observability/cluster-metrics';
import type { Lifecycle } from './observability/health';
import { jsonLinesLog } from './observability/json-lines-log';
import type { RuntimeLog } from './runtime-log/runtime-log';
import { writePidFile } from './runtime/pid-file';
import { followSetServing, refusedWorkerSet, runWorkerSet, WORKER_SERVING } from './runtime/worker-set';

async function startSimulated(port: number) {
  try {
    return await startSimulatedUpstream({ port });
  } catch (error) {
    throw new Error(
      `the simulated host could not listen on port ${port} (${(error as Error).message}): ` +
        'set SIMULATED_HOST_PORT to a free port, or to "off"',
    );
  }
}

/**
 * Past the shutdown's grace period, how long the requests it ends have to be settled and answered
 * (their settlements appended to the log) before the connections still open are cut.
 */
const ANSWERING_AFTER_GRACE_MS = 5_000;

async function start(): Promise<void> {
  let config;
  try {
    config = loadConfig();
    const refused = cluster.isPrimary ? refusedWorkerSet(config) : null;
    if (refused) throw refused;
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  // A worker of a set (WORKERS > 1): the primary runs the simulated host, writes gateway.pid, and gathers the metrics.
  const worker = cluster.isWorker;
  if (worker && config.metrics) answerPrimaryGathering();
  const simulated = worker || config.simulatedHostPort === null ? null : await startSimulated(config.simulatedHostPort);
  // The shipped catalogue addresses the simulated host through this variable: the port it runs on,
  // or when it is off, the catalogue's default (where an operator may run one of their own). Workers inherit the primary's.
  if (simulated) process.env.SIMULATED_HOST_PORT = new URL(simulated.url).port;
  else if (!worker) delete process.env.SIMULATED_HOST_PORT;
  if (config.workers > 1 && cluster.isPrimary) {
    // The dashboard's secret (DASHBOARD_SECRET unset) made once, here: workers starting together would each find none and make their own.
    SessionTokens.fromEnvironment(config.dataDir, config.dashboardSecret);
    return runWorkerSet(config, simulated);
  }
  // Loaded here, not above: a worker set's primary serves nothing and stays small without them.
  const [{ createApp, endOpenRequests }, { Catalogue }, { openRuntime }, { listenOn }] = await Promise.all([
    import('./app'),
    import('./catalogue/catalogue'),
    import('./runtime/runtime'),
    import('./http/http-adapter'),
  ]);
  const catalogue = Catalogue.load(config.cataloguePath);
  // The runtime's lines, each at its level: before the application (and its logger) exist, JSON
  // lines shaped as pino's on standard output (the replay of the log at start); after, through pino.
  let log: RuntimeLog = jsonLinesLog({ level: config.logLevel, pretty: config.logPretty });
  const runtime = await openRuntime(config, {
    sweep: true,
    serving: true,
    log: { info: (line) => log.info(line), warn: (line) => log.warn(line), error: (line) => log.error(line) },
  });
  const lifecycle: Lifecycle = { draining: false };
  // A worker of a set is ready only once every worker of the set serves (the primary says when).
  if (worker) followSetServing(config.workers, (starting) => (lifecycle.starting = starting));
  const app = await createApp(runtime, { catalogue, lifecycle });
  const fastify = app.getHttpAdapter().getInstance();
  const logger = fastify.log;
  log = { info: (line) => logger.info(line), warn: (line) => logger.warn(line), error: (line) => logger.error(line) };
  const unpricedCache = catalogue.cachePricesAssumed();
  if (unpricedCache.length > 0) {
    logger.warn(
      `the catalogue gives no cacheRead price for ${unpricedCache.join(', ')}: ` +
        'their cached input tokens are billed at the input price',
    );
  }
  // Which worker answered, for an operator (and the tests) telling them apart.
  if (worker)
    app.getHttpServer().prependListener('request', (_request, reply) => reply.setHeader('x-gateway-worker', String(process.pid)));
  await app.listen(listenOn(config.port, config.host));
  const removePidFile = worker ? () => {} : writePidFile(config.dataDir);
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  logger.info(
    `model gateway listening on http://${config.host}:${port} ` +
      `(events: ${config.eventStoreUrl ? 'EventStoreDB' : `SQLite in ${config.dataDir}`}, ` +
      `read models: ${config.redisUrl ? (config.redisCluster ? 'Redis Cluster' : 'Redis') : 'in-process'}` +
      `${simulated ? `, simulated host on ${simulated.url}` : ''}` +
      `${'metricsUrl' in fastify ? `, metrics on ${String(fastify.metricsUrl)}` : ''})`,
  );
  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    // Not ready from now on. New requests are still taken for the drain (a load balancer sends them
    // until it has seen readiness fail); then no new connections, and what is in flight may finish
    // within the grace period.
    lifecycle.leaving = true;
    if (config.shutdownDrainMs > 0) {
      logger.info(`model gateway stopping (${signal}): not ready, still taking requests for ${config.shutdownDrainMs} ms`);
      await sleep(config.shutdownDrainMs);
    }
    lifecycle.draining = true;
    const server = app.getHttpServer();
    logger.info(`model gateway stopping (${signal}): letting requests in flight finish for up to ${config.shutdownGraceMs} ms`);
    // Past the grace period, each request still open is ended: settled as its client leaving would
    // be (what was delivered is billed), under its own status (`shutdown`), and answered — a 503 in
    // its surface's format, or its stream's error event — before its connection is closed; another
    // route's request is answered a 503 in its route's format. What is still open once they are (an
    // answer already under way, a settlement the log did not take in time) is cut.
    const cut = setTimeout(() => {
      const { ended, answered } = endOpenRequests(app, ANSWERING_AFTER_GRACE_MS);
      logger.warn(
        `shutdown grace period over: ${ended} request(s) still open ended as shutdown (each answered 503, ` +
          "or its stream's error event); the connections still open then are cut",
      );
      void answered.then(() => server.closeAllConnections());
    }, config.shutdownGraceMs);
    // A connection kept alive after its last reply would hold the close until its timeout.
    const idle = setInterval(() => server.closeIdleConnections(), 100);
    // Whatever fails while closing, the log is still closed (every settlement made so far is in it).
    await app.close().catch((error: Error) => logger.error(`closing the server: ${error.message}`));
    clearTimeout(cut);
    clearInterval(idle);
    // Read models that cannot be saved (a full disk) are only logged: the log closes all the same.
    // Exit 1 only when closing the log itself failed.
    let code = 0;
    await runtime.close().catch((error: Error) => {
      logger.error(`closing the event log: ${error.message}`);
      code = 1;
    });
    await simulated?.close();
    removePidFile();
    logger.info(code === 0 ? 'model gateway stopped (event log closed)' : 'model gateway stopped');
    // pino writes synchronously to stdout; a pretty transport (a worker) is flushed before exit.
    const flushable = logger as typeof logger & { flush?: (done: () => void) => void };
    if (flushable.flush) flushable.flush(() => process.exit(code));
    else process.exit(code);
  };
  // A reload swaps the catalogue in one step: requests admitted before it keep the hosts and prices
  // they were planned with; a file that cannot be read or is refused leaves the running one.
  process.on('SIGHUP', () => {
    try {
      const version = catalogue.reload(config.cataloguePath);
      logger.info(`catalogue reloaded from ${config.cataloguePath} (version ${version}): requests from now on use it`);
    } catch (error) {
      logger.error(`catalogue not reloaded, the running one is kept: ${(error as Error).message}`);
    }
  });
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  // Tells the primary this worker serves: gateway.pid and the set's start-up line wait for every worker.
  if (worker) process.send!({ type: WORKER_SERVING, url: `http://${config.host}:${port}` });
}

start().catch((error: Error) => {
  process.stderr.write(`model gateway failed to start: ${error.message}\n`);
  process.exit(1);
});
