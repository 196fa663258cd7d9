import 'reflect-metadata';
import { createApp } from './app';
import { Catalogue } from './catalogue/catalogue';
import { ConfigError, loadConfig } from './config/config';
import { startSimulatedUpstream } from './simulated-upstream/simulated-upstream';
import { openRuntime } from './runtime/runtime';

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

async function start(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const log = (line: string) => process.stderr.write(`${new Date().toISOString()} ${line}\n`);
  const simulated = config.simulatedHostPort === null ? null : await startSimulated(config.simulatedHostPort);
  // The shipped catalogue addresses the simulated host through this variable: the port it runs on,
  // or when it is off, the catalogue's default (where an operator may run one of their own).
  if (simulated) process.env.SIMULATED_HOST_PORT = new URL(simulated.url).port;
  else delete process.env.SIMULATED_HOST_PORT;
  const catalogue = Catalogue.load(config.cataloguePath);
  const unpricedCache = catalogue.cachePricesAssumed();
  if (unpricedCache.length > 0) {
    log(
      `warning: the catalogue gives no cacheRead price for ${unpricedCache.join(', ')}: ` +
        'their cached input tokens are billed at the input price',
    );
  }
  const runtime = await openRuntime(config, { sweep: true, serving: true, log });
  const app = await createApp(runtime, { catalogue });
  await app.listen(config.port, config.host);
  const address = app.getHttpServer().address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  log(
    `model gateway listening on http://${config.host}:${port} ` +
      `(events: ${config.eventStoreUrl ? 'EventStoreDB' : `SQLite in ${config.dataDir}`}, ` +
      `read models: ${config.redisUrl ? 'Redis' : 'in-process'}` +
      `${simulated ? `, simulated host on ${simulated.url}` : ''})`,
  );
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    await app.close();
    await runtime.close();
    await simulated?.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop());
  process.on('SIGINT', () => void stop());
}

start().catch((error: Error) => {
  process.stderr.write(`model gateway failed to start: ${error.message}\n`);
  process.exit(1);
});
