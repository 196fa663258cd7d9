import type { CreditsReserved, RequestRefused } from '../../src/ledger/ledger.events';
import { OtherInstance, startGateway, startOtherInstance, TEST_MODELS, TestGateway } from '../support/gateway';
import { eventually } from '../support/processes';
import { describeWithRedis } from '../support/redis';
import { createKey } from '../support/keys';

/** Rate limits through the gateway: bursts over the limit, on one instance and two, in Redis and in-process. */

const M = TEST_MODELS;

interface Answer {
  status: number;
  headers: Headers;
  body: any;
}

const chat = async (base: string, key: string, stream = false): Promise<Answer> => {
  const response = await fetch(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: M.gpt.slug, max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }], stream }),
  });
  const text = await response.text();
  return {
    status: response.status,
    headers: response.headers,
    body: stream && response.status === 200 ? text : JSON.parse(text),
  };
};

const messages = async (base: string, key: string): Promise<Answer> => {
  const response = await fetch(`${base}/api/v1/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key, 'anthropic-version': '2023-06-01' },
    body: JSON.stringify({ model: M.gpt.slug, max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] }),
  });
  return { status: response.status, headers: response.headers, body: await response.json() };
};

const statuses = (answers: Answer[]) => answers.map((a) => a.status).sort();
const limitHeaders = (a: Answer) => ({
  limit: a.headers.get('x-ratelimit-limit-requests'),
  remaining: a.headers.get('x-ratelimit-remaining-requests'),
  reset: a.headers.get('x-ratelimit-reset-requests'),
});

async function reservationsOf(g: TestGateway, keyId: string): Promise<number> {
  const events = await g.t.runtime.events.readAll(0, 1_000_000);
  return events.filter((e) => e.type === 'CreditsReserved' && (e.data as CreditsReserved['data']).keyId === keyId).length;
}

function suite(name: string, redis: boolean) {
  describe(name, () => {
    let g: TestGateway;

    beforeAll(async () => {
      g = await startGateway({ redis });
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.', usage: { input: 20, output: 10 } } });
    });
    afterAll(() => g.close());

    const keyWith = async (rateLimits: { requestsPerMinute?: number; tokensPerMinute?: number }, orgId = g.orgId) => {
      const key = await createKey(g.t.runtime, orgId, 'limited', { rateLimits });
      await g.t.runtime.projector.catchUp();
      return key;
    };

    it('a burst of twice the requests limit: exactly the limit served, the rest 429 with Retry-After and the limits, nothing reserved for them', async () => {
      const { secret, keyId } = await keyWith({ requestsPerMinute: 10 });
      const answers = await Promise.all(Array.from({ length: 20 }, () => chat(g.baseUrl, secret)));
      expect(statuses(answers)).toEqual([...Array(10).fill(200), ...Array(10).fill(429)]);

      const served = answers.filter((a) => a.status === 200);
      // Each admitted request took one of the ten: what remained after it, 9 down to 0, once each.
      expect(served.map((a) => Number(limitHeaders(a).remaining)).sort((x, y) => x - y)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
      for (const a of served) {
        expect(limitHeaders(a)).toEqual({ limit: '10', remaining: expect.any(String), reset: '60s' });
        expect(a.body.usage.total_tokens).toBe(30);
      }
      for (const a of answers.filter((x) => x.status === 429)) {
        expect(limitHeaders(a)).toEqual({ limit: '10', remaining: '0', reset: expect.stringMatching(/^(59|60)s$/) });
        expect(Number(a.headers.get('retry-after'))).toBeGreaterThanOrEqual(59);
        expect(a.body.error).toEqual({
          message: expect.stringMatching(
            /^rate limit reached: this key may make 10 requests per minute; try again in (59|60) s$/,
          ),
          type: 'rate_limit_error',
          param: null,
          code: 'rate_limited',
        });
        expect(a.headers.get('x-ratelimit-limit-tokens')).toBeNull();
      }
      await g.settled();
      expect(await reservationsOf(g, keyId)).toBe(10);

      // The refusals are in the request log, billed nothing.
      const refused = answers.find((a) => a.status === 429)!;
      const entry = await g.logged(refused.headers.get('x-request-id')!);
      expect(entry).toMatchObject({ status: 'rate_limited', cost: 0, reservationId: null, keyId });
      // Refusals are recorded beside the answer, not before it: all ten, once written.
      const refusals = async () =>
        (await g.t.runtime.events.readAll(0, 1_000_000)).filter(
          (e) => e.type === 'RequestRefused' && (e.data as RequestRefused['data']).keyId === keyId,
        ) as unknown as RequestRefused[];
      await eventually(async () => (await refusals()).length >= 10);
      expect((await refusals()).map((r) => r.data.status)).toEqual(Array(10).fill('rate_limited'));
    });

    it("in the messages format too; a streamed reply carries the limits in its headers; another key's count is its own", async () => {
      const { secret } = await keyWith({ requestsPerMinute: 2 });
      const streamed = await chat(g.baseUrl, secret, true);
      expect(streamed.status).toBe(200);
      expect(streamed.headers.get('content-type')).toContain('text/event-stream');
      expect(limitHeaders(streamed)).toEqual({ limit: '2', remaining: '1', reset: '60s' });
      expect((await messages(g.baseUrl, secret)).status).toBe(200);
      const refused = await messages(g.baseUrl, secret);
      expect(refused.status).toBe(429);
      expect(refused.body).toEqual({
        type: 'error',
        error: { type: 'rate_limit_error', message: expect.stringContaining('2 requests per minute') },
        request_id: refused.headers.get('x-request-id'),
      });
      expect(refused.headers.get('retry-after')).toMatch(/^(59|60)$/);
      // The test key has no limits: served, and no rate-limit headers.
      const unlimited = await chat(g.baseUrl, g.key);
      expect(unlimited.status).toBe(200);
      expect(unlimited.headers.get('x-ratelimit-limit-requests')).toBeNull();
    });

    it('tokens per minute: the billed tokens count; once the window holds the limit, 429 naming it', async () => {
      const { secret } = await keyWith({ tokensPerMinute: 50 });
      const first = await chat(g.baseUrl, secret);
      expect(first.status).toBe(200);
      expect(first.headers.get('x-ratelimit-limit-tokens')).toBe('50');
      expect(first.headers.get('x-ratelimit-remaining-tokens')).toBe('50');
      const second = await chat(g.baseUrl, secret);
      expect(second.status).toBe(200);
      expect(second.headers.get('x-ratelimit-remaining-tokens')).toBe('20');
      const third = await chat(g.baseUrl, secret);
      expect(third.status).toBe(429);
      expect(third.headers.get('x-ratelimit-remaining-tokens')).toBe('0');
      expect(third.body.error.message).toMatch(/this key may make 50 tokens per minute/);
    });

    it("the organization's default applies to its keys without limits of their own, not to those with", async () => {
      const { orgId } = await g.t.runtime.identity.createOrganization('defaults');
      await g.t.runtime.ledger.grant(orgId, 100_000_000_000, 'test');
      await g.t.runtime.identity.setOrganizationRateLimits(orgId, { requestsPerMinute: 3 });
      const plain = await createKey(g.t.runtime, orgId, 'plain');
      const own = await keyWith({ requestsPerMinute: 5 }, orgId);
      const plainAnswers = await Promise.all(Array.from({ length: 6 }, () => chat(g.baseUrl, plain.secret)));
      expect(statuses(plainAnswers)).toEqual([200, 200, 200, 429, 429, 429]);
      const ownAnswers = await Promise.all(Array.from({ length: 6 }, () => chat(g.baseUrl, own.secret)));
      expect(statuses(ownAnswers)).toEqual([200, 200, 200, 200, 200, 429]);
      // Cleared: the default no longer applies.
      await g.t.runtime.identity.setOrganizationRateLimits(orgId, null);
      const other = await createKey(g.t.runtime, orgId, 'after');
      await g.t.runtime.projector.catchUp();
      const after = await chat(g.baseUrl, other.secret);
      expect(after.status).toBe(200);
      expect(after.headers.get('x-ratelimit-limit-requests')).toBeNull();
    });
  });
}

suite('rate limits, counted in this process (no Redis)', false);

describeWithRedis('rate limits', () => {
  suite('counted in Redis', true);

  describe('across two instances sharing Redis', () => {
    let g: TestGateway;
    let other: OtherInstance;

    beforeAll(async () => {
      g = await startGateway({ redis: true });
      other = await startOtherInstance(g);
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
    });
    afterAll(async () => {
      await other.close();
      await g.close();
    });

    it('a burst of twice the limit over both instances: exactly the limit served, the rest 429', async () => {
      const { secret, keyId } = await createKey(g.t.runtime, g.orgId, 'shared', {
        rateLimits: { requestsPerMinute: 15 },
      });
      await g.t.runtime.projector.catchUp();
      await other.runtime.projector.catchUp();
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => chat(i % 2 === 0 ? g.baseUrl : other.url, secret)));
      expect(statuses(answers)).toEqual([...Array(15).fill(200), ...Array(15).fill(429)]);
      expect(
        answers
          .filter((a) => a.status === 200)
          .map((a) => Number(limitHeaders(a).remaining))
          .sort((x, y) => x - y),
      ).toEqual(Array.from({ length: 15 }, (_, i) => i));
      for (const a of answers.filter((x) => x.status === 429)) expect(a.headers.get('retry-after')).toMatch(/^(59|60)$/);
      await g.settled();
      expect(await reservationsOf(g, keyId)).toBe(15);
      expect((await g.audit()).differences).toEqual([]);
    });
  });
});
