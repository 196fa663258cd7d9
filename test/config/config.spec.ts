import { spawnSync } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config/config';
import { eventually, ROOT, startNode } from '../support/processes';
import { tempDir } from '../support/temp';

describe('configuration', () => {
  it('has embedded defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 8080,
      host: '0.0.0.0',
      redisUrl: null,
      redisCluster: false,
      eventStoreUrl: null,
      requestTimeoutMs: 600_000,
      requestReadTimeoutMs: 60_000,
      reservationTtlMs: 900_000,
      sseKeepAliveMs: 15_000,
      simulatedHostPort: 8091,
    });
    expect(config.dataDir).toBe(join(process.cwd(), 'data'));
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT must be a whole number'],
    [{ PORT: '70000' }, 'PORT must be between 0 and 65535'],
    [{ REDIS_URL: 'localhost:6379' }, 'REDIS_URL must start with redis:// or rediss://'],
    [{ REDIS_URL: 'not a url' }, 'REDIS_URL is not a URL'],
    [{ REDIS_URL: 'redis://a:7000,redis://b:7001' }, 'REDIS_URL names several servers: set REDIS_CLUSTER=true'],
    [{ REDIS_CLUSTER: 'true' }, 'REDIS_URL must name one or more nodes of the cluster'],
    [{ REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:7000, b:7001' }, 'REDIS_URL must start with redis:// or rediss://'],
    [{ REDIS_CLUSTER: 'maybe', REDIS_URL: 'redis://a:7000' }, 'REDIS_CLUSTER must be on or off'],
    [{ EVENTSTORE_URL: 'http://x:2113' }, 'EVENTSTORE_URL must start with esdb://'],
    [{ EVENTSTORE_URL: 'esdb://x:2113' }, 'EVENTSTORE_URL needs username:password@ in secure mode'],
    [
      { EVENTSTORE_URL: 'kdb://x:2113?tsl=false' },
      'EVENTSTORE_URL has an option @eventstore/db-client 6.2.1 does not know: "tsl"',
    ],
    [{ EVENTSTORE_URL: 'esdb://a:b@x:2113?tlsVerifyCert=false' }, 'EVENTSTORE_URL sets tlsVerifyCert=false'],
    [{ REQUEST_TIMEOUT_MS: '600000', RESERVATION_TTL_MS: '1000' }, 'RESERVATION_TTL_MS must be longer than REQUEST_TIMEOUT_MS'],
    [{ REDIS_PREFIX: 'has space' }, 'REDIS_PREFIX must be'],
  ])('rejects %j naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(ConfigError);
    expect(() => loadConfig(env)).toThrow(message);
  });

  it.each([
    ['esdb://localhost:2113?tls=false', 'esdb://localhost:2113?tls=false'],
    ['kurrentdb://localhost:2113?tls=false', 'esdb://localhost:2113?tls=false'],
    ['kdb://admin:changeit@node1,node2:2114', 'esdb://admin:changeit@node1:2113,node2:2114'],
    ['kurrentdb+discover://admin:changeit@cluster.example.com', 'esdb+discover://admin:changeit@cluster.example.com:2113'],
  ])('takes EVENTSTORE_URL %s as the client connection string %s', (raw, connectionString) => {
    expect(loadConfig({ EVENTSTORE_URL: raw }).eventStoreUrl).toBe(connectionString);
  });

  it('takes REDIS_URL as one or more nodes of a Redis Cluster with REDIS_CLUSTER', () => {
    expect(loadConfig({ REDIS_CLUSTER: 'true', REDIS_URL: 'redis://a:7000, redis://b:7001' })).toMatchObject({
      redisUrl: 'redis://a:7000,redis://b:7001',
      redisCluster: true,
    });
    expect(loadConfig({ REDIS_URL: 'redis://a:6379' })).toMatchObject({ redisUrl: 'redis://a:6379', redisCluster: false });
  });

  it('takes WORKERS as a number of processes, or auto for one per core; unset, one', () => {
    expect(loadConfig({}).workers).toBe(1);
    expect(loadConfig({ WORKERS: '4' }).workers).toBe(4);
    expect(loadConfig({ WORKERS: 'auto' }).workers).toBe(availableParallelism());
    expect(() => loadConfig({ WORKERS: '0' })).toThrow('configuration: WORKERS must be between 1 and 256, got 0');
    expect(() => loadConfig({ WORKERS: 'many' })).toThrow('configuration: WORKERS must be a whole number, got "many"');
  });

  it('refuses one port for the service and its simulated host (8091 unless set), naming both; 0 (any free port) and off are fine', () => {
    expect(() => loadConfig({ PORT: '8091' })).toThrow(
      "configuration: SIMULATED_HOST_PORT is 8091, the service's PORT too: give one of them another port",
    );
    expect(() => loadConfig({ PORT: '9000', SIMULATED_HOST_PORT: '9000' })).toThrow(ConfigError);
    expect(loadConfig({ PORT: '8091', SIMULATED_HOST_PORT: 'off' }).simulatedHostPort).toBeNull();
    expect(loadConfig({ PORT: '0', SIMULATED_HOST_PORT: '0' })).toMatchObject({ port: 0, simulatedHostPort: 0 });
  });

  it('takes REDIS_CONNECT_TIMEOUT_MS as the bound on the first connection to Redis (10 s unless set)', () => {
    expect(loadConfig({}).redisConnectTimeoutMs).toBe(10_000);
    expect(loadConfig({ REDIS_CONNECT_TIMEOUT_MS: '2500' }).redisConnectTimeoutMs).toBe(2_500);
    expect(() => loadConfig({ REDIS_CONNECT_TIMEOUT_MS: 'soon' })).toThrow(
      'configuration: REDIS_CONNECT_TIMEOUT_MS must be a whole number, got "soon"',
    );
    expect(() => loadConfig({ REDIS_CONNECT_TIMEOUT_MS: '10' })).toThrow(
      'configuration: REDIS_CONNECT_TIMEOUT_MS must be between 100 and 600000, got 10',
    );
  });

  it('stops the service with one clear line on a bad value', () => {
    const run = spawnSync(process.execPath, [join(ROOT, 'dist/src/main.js')], {
      env: { ...process.env, PORT: 'eighty' },
      encoding: 'utf8',
      timeout: 20_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr.trim()).toBe('configuration: PORT must be a whole number, got "eighty"');
  });

  it('starts on the shipped catalogue with the simulated host off', async () => {
    const dir = tempDir('main-off');
    const service = startNode(join(ROOT, 'dist/src/main.js'), [], {
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dir.path,
      SIMULATED_HOST_PORT: 'off',
      REDIS_URL: '',
    });
    try {
      const exited = service.exited().then((code) => {
        throw new Error(`the service exited (${code}): ${service.output()}`);
      });
      exited.catch(() => undefined); // once listening, its exit is the test's own doing
      await Promise.race([eventually(() => service.output().includes('model gateway listening'), 20_000), exited]);
      expect(service.output()).toMatch(
        /model gateway listening on http:\/\/127\.0\.0\.1:\d+ \(events: SQLite in .*, read models: in-process\)/,
      );
    } finally {
      service.process.kill('SIGTERM');
      await service.exited();
      dir.cleanup();
    }
  });
});
