import request from 'supertest';
import { createApp } from '../../src/app';
import { readiness, READY_LAG_BOUND } from '../../src/observability/health';
import { startFakeUpstream } from '../support/fake-upstream';
import { testCatalogue } from '../support/gateway';
import { openTestRuntime } from '../support/runtime';

describe('readiness, decided', () => {
  it('is ready only when not draining, the log answers and the read models are within the bound', () => {
    const facts = { draining: false, head: 10, applied: 10, store: null };
    expect(readiness(facts)).toEqual({ ready: true, reasons: [] });
    expect(readiness({ ...facts, draining: true }).reasons).toEqual(['draining: the service is shutting down']);
    expect(readiness({ ...facts, head: new Error('closed'), applied: 0 }).reasons).toEqual(['event log: closed']);
    expect(readiness({ ...facts, store: new Error('The client is closed') }).reasons).toEqual([
      'read models: their store does not answer (The client is closed)',
    ]);
    expect(readiness({ ...facts, head: READY_LAG_BOUND + 5, applied: 4 }).reasons).toEqual([
      `read models: ${READY_LAG_BOUND + 1} events behind the log (bound ${READY_LAG_BOUND})`,
    ]);
    expect(readiness({ ...facts, head: READY_LAG_BOUND + 5, applied: 5 }).ready).toBe(true);
  });
});

describe('/health/live and /health/ready', () => {
  it('live while serving; ready until draining, then 503 with the reason; GET /health unchanged', async () => {
    const fake = await startFakeUpstream();
    const t = await openTestRuntime({ env: { SIMULATED_HOST_PORT: 'off' } });
    const lifecycle = { draining: false };
    const app = await createApp(t.runtime, { logger: false, catalogue: testCatalogue(fake), lifecycle });
    try {
      const server = app.getHttpServer();
      expect((await request(server).get('/health/live')).body).toEqual({ status: 'live' });
      expect((await request(server).get('/health')).body).toEqual({ status: 'ok' });
      const ready = await request(server).get('/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ ready: true, reasons: [] });
      lifecycle.draining = true;
      const draining = await request(server).get('/health/ready');
      expect(draining.status).toBe(503);
      expect(draining.body).toEqual({ ready: false, reasons: ['draining: the service is shutting down'] });
      expect((await request(server).get('/health/live')).status).toBe(200);
    } finally {
      await app.close();
      await fake.close();
      await t.cleanup();
    }
  });
});
