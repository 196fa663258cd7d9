import { startGateway, TestGateway } from '../support/gateway';
import { gatewayOnOwnRedis, GatewayOnOwnRedis } from '../support/gateway-on-own-redis';
import { LogCapture } from '../support/log-capture';
import { hasRedisServer } from '../support/own-redis';

const PROBES = ['/health', '/health/live', '/health/ready', '/metrics'];

/**
 * Health probes and metrics scrapes write their request lines at debug while they answer 2xx: at
 * the default level (info) nothing, at debug a line each; a probe answered otherwise (readiness 503
 * with Redis, a server of the test's own, killed under the gateway) is logged as any request.
 */
(hasRedisServer ? describe : describe.skip)('request lines of probes and scrapes', () => {
  let own: GatewayOnOwnRedis;
  let g: TestGateway;
  const log = new LogCapture();

  beforeAll(async () => {
    own = await gatewayOnOwnRedis({ logStream: log });
    g = own.g;
  });
  afterAll(() => own.close());

  const get = (path: string) => fetch(`${g.baseUrl}${path}`, { headers: { authorization: `Bearer ${g.key}` } });

  it('writes no line for a probe answered 2xx at info, and the line of any other request', async () => {
    const probed: string[] = [];
    for (const path of PROBES) {
      const res = await get(path);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
      probed.push(res.headers.get('x-request-id')!);
    }
    // A request after them: its line is written once it is answered, after theirs would have been.
    const models = await get('/api/v1/models');
    expect(models.status).toBe(200);
    expect(await log.request(models.headers.get('x-request-id')!)).toMatchObject({ level: 30, path: '/api/v1/models' });
    expect(log.lines.filter((l) => probed.includes(l.requestId))).toEqual([]);
  });

  it('writes the line of a probe not answered 2xx: a 503 readiness at error, a wrong method at warn', async () => {
    const wrong = await fetch(`${g.baseUrl}/metrics`, { method: 'POST' });
    expect(wrong.status).toBe(404);
    expect(await log.request(wrong.headers.get('x-request-id')!)).toMatchObject({ level: 40, path: '/metrics', status: 404 });

    await own.stopRedis();
    const ready = await get('/health/ready');
    expect(ready.status).toBe(503);
    expect(await log.request(ready.headers.get('x-request-id')!)).toMatchObject({
      level: 50,
      path: '/health/ready',
      status: 503,
    });
    // Live all the same, and quiet.
    const live = await get('/health/live');
    expect(live.status).toBe(200);
    const after = await fetch(`${g.baseUrl}/api/v1/nothing`);
    await log.request(after.headers.get('x-request-id')!);
    expect(log.lines.filter((l) => l.requestId === live.headers.get('x-request-id'))).toEqual([]);
  });
});

describe('request lines of probes and scrapes at LOG_LEVEL=debug', () => {
  let g: TestGateway;
  const log = new LogCapture();
  beforeAll(async () => {
    g = await startGateway({ env: { LOG_LEVEL: 'debug' }, logStream: log });
  });
  afterAll(() => g.close());

  it('writes them, at debug (20)', async () => {
    for (const path of PROBES) {
      const res = await fetch(`${g.baseUrl}${path}?from=probe`);
      expect(res.status).toBe(200);
      expect(await log.request(res.headers.get('x-request-id')!)).toMatchObject({ level: 20, path, status: 200, msg: 'request' });
    }
  });
});
