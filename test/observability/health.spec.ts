import request from 'supertest';
import { createApp } from '../../src/app';
import { eventsBehind, readiness, READY_LAG_BOUND } from '../../src/observability/health';
import { startFakeUpstream } from '../support/fake-upstream';
import { testCatalogue } from '../support/gateway';
import { openTestRuntime } from '../support/runtime';

describe('readiness, decided', () => {
  it('is ready only when not draining, the log answers and the read models are within the bound', () => {
    const facts = { draining: false, behind: 0, appends: null, store: null, logReplaced: null };
    expect(readiness(facts)).toEqual({ ready: true, reasons: [] });
    expect(readiness({ ...facts, draining: true }).reasons).toEqual(['draining: the service is shutting down']);
    expect(readiness({ ...facts, behind: new Error('closed') }).reasons).toEqual(['event log: closed']);
    expect(readiness({ ...facts, store: new Error('The client is closed') }).reasons).toEqual([
      'read models: their store does not answer (The client is closed)',
    ]);
    expect(readiness({ ...facts, behind: READY_LAG_BOUND + 1 }).reasons).toEqual([
      `read models: more than ${READY_LAG_BOUND} events behind the log`,
    ]);
    expect(readiness({ ...facts, behind: READY_LAG_BOUND }).ready).toBe(true);
    expect(readiness({ ...facts, logReplaced: 'the log holds no identity' }).reasons).toEqual([
      'event log: not the log the read models describe (the log holds no identity)',
    ]);
    expect(readiness({ ...facts, servingClaim: 'its claim … was last renewed 31 s ago' }).reasons).toEqual([
      'serving claim: its claim … was last renewed 31 s ago',
    ]);
    expect(readiness({ ...facts, servingClaim: null }).ready).toBe(true);
  });

  it('counts the events behind, not the distance between positions (EventStoreDB positions are byte offsets)', async () => {
    // A log whose positions leap by hundreds per event, as EventStoreDB's commit positions do.
    const log = { headPosition: async () => 5_000, readAll: async (after: number) => (after < 5_000 ? [{}, {}, {}] : []) };
    expect(await eventsBehind(log, 4_200, 1_001)).toBe(3);
    expect(await eventsBehind(log, 5_000, 1_001)).toBe(0);
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
