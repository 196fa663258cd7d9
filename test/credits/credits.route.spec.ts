import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { openRuntime } from '../../src/runtime/runtime';
import { eventually } from '../support/processes';
import { testRedisUrl } from '../support/redis';
import { openTestRuntime, TestRuntime } from '../support/runtime';
import { uncachedUsage } from '../../src/ledger/money';
import { pricesOf } from '../support/ledger';
import { createKey, revokeKey } from '../support/keys';

for (const redis of [false, true]) {
  (!redis || testRedisUrl() ? describe : describe.skip)(`GET /api/v1/credits (${redis ? 'Redis' : 'in-process'})`, () => {
    let t: TestRuntime;
    let app: NestFastifyApplication;
    let orgId: string;
    let secret: string;
    let keyId: string;

    beforeAll(async () => {
      t = await openTestRuntime({ redis });
      app = await createApp(t.runtime, { logger: false });
      ({ orgId } = await t.runtime.identity.createOrganization('Acme'));
      await t.runtime.ledger.grant(orgId, 12_500_000_000, 'welcome');
      ({ secret, keyId } = await createKey(t.runtime, orgId, 'ci'));
      await t.runtime.projector.catchUp();
      const admission = await t.runtime.ledger.admit({
        requestId: 'q',
        keyId,
        surface: 's',
        model: 'm',
        orgId,
        amount: 500_000_000,
      });
      if (!admission.admitted) throw new Error('expected admission');
      await t.runtime.ledger.recordSettlement(admission.ticket, {
        usage: uncachedUsage(1_000_000, 100_000),
        prices: pricesOf(150_000_000, 600_000_000),
        host: 'h',
        hostModel: 'hm',
        status: 'ok',
        latencyMs: 5,
      });
      await t.runtime.ledger.admit({ requestId: 'q2', keyId, surface: 's', model: 'm', orgId, amount: 1_000_000_000 });
      await t.runtime.projector.catchUp();
    });
    afterAll(async () => {
      await app.close();
      await t.cleanup();
    });

    it('answers the balance in decimal credits', async () => {
      const res = await request(app.getHttpServer()).get('/api/v1/credits').set('Authorization', `Bearer ${secret}`).expect(200);
      // spent: 1M × $0.15/M + 100k × $0.60/M = 0.15 + 0.06 = 0.21
      expect(res.body).toEqual({
        data: {
          total_credits: 12.5,
          total_usage: 0.21,
          reserved: 1,
          available: 11.29,
          // The same exactly, in nano-credits: integers an auditor can reconcile with a statement.
          total_credits_nano: 12_500_000_000,
          total_usage_nano: 210_000_000,
          reserved_nano: 1_000_000_000,
          available_nano: 11_290_000_000,
        },
      });
      expect(res.headers['x-request-id']).toMatch(/^req_[0-9a-f]{32}$/);
    });

    it.each([
      ['no header', undefined, /missing API key/],
      ['not bearer', 'Basic abc', /missing API key/],
      ['unknown key', `Bearer sk-svc-${'A'.repeat(44)}`, /invalid or revoked/],
      ['malformed key', 'Bearer hello', /invalid or revoked/],
    ])("refuses %s with 401 in OpenRouter's error format (the status as its code)", async (_label, header, message) => {
      const req = request(app.getHttpServer()).get('/api/v1/credits');
      if (header) req.set('Authorization', header);
      const res = await req.expect(401);
      expect(res.body).toEqual({ error: { code: 401, message: expect.stringMatching(message) } });
      expect(JSON.stringify(res.body)).not.toContain('sk-svc-AAAA');
    });

    it('answers unknown routes with 404 in the same format', async () => {
      const res = await request(app.getHttpServer()).get('/api/v1/nope').expect(404);
      expect(res.body.error).toMatchObject({ code: 'not_found' });
    });

    it('stops accepting a revoked key on every instance within a second', async () => {
      const other = await openRuntime(loadConfig(t.env));
      const otherApp = await createApp(other, { logger: false });
      try {
        const { secret: s2, keyId: k2 } = await createKey(t.runtime, orgId, 'to revoke');
        await other.projector.catchUp();
        await request(otherApp.getHttpServer()).get('/api/v1/credits').set('Authorization', `Bearer ${s2}`).expect(200);
        await revokeKey(t.runtime, k2);
        const revokedAt = Date.now();
        await eventually(async () => {
          const res = await request(otherApp.getHttpServer()).get('/api/v1/credits').set('Authorization', `Bearer ${s2}`);
          return res.status === 401;
        }, 1000);
        expect(Date.now() - revokedAt).toBeLessThan(1000);
      } finally {
        await otherApp.close();
        await other.close();
      }
    });
  });
}
