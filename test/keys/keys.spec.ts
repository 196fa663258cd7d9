import { IdentityRuleError } from '../../src/identity/identity-rule-error';
import { keyStatus } from '../../src/identity/key-lookup';
import { eventually } from '../support/processes';
import { describeWithRedis } from '../support/redis';
import { fundedOrganization } from '../support/runtime';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { chatCompletion } from '../support/streams';
import { createKey, revokeKey, updateKey } from '../support/keys';

/** A key's settings (expiry, disabling, changes), its look-up (GET /api/v1/key) and its organization's generations. */

const M = TEST_MODELS;

function suite(name: string, redis: boolean) {
  describe(name, () => {
    let g: TestGateway;
    beforeAll(async () => {
      g = await startGateway({ redis });
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.', usage: { input: 20, output: 10 } } });
    });
    afterAll(() => g.close());

    const get = (path: string, secret: string) =>
      fetch(`${g.baseUrl}${path}`, { headers: { authorization: `Bearer ${secret}` } });
    const chat = (secret: string) => chatCompletion(g.baseUrl, secret, { max_tokens: 20 });
    const caughtUp = () => g.t.runtime.projector.catchUp();

    it('GET /api/v1/key: the calling key, what it has spent, its limits and expiry — never its secret', async () => {
      const expiresAt = Date.parse('2099-01-01T00:00:00Z');
      const key = await createKey(g.t.runtime, g.orgId, 'agent', {
        rateLimits: { requestsPerMinute: 100 },
        expiresAt,
      });
      await caughtUp();
      const served = await chat(key.secret);
      expect(served.status).toBe(200);
      const cost = ((await served.json()) as { usage: { cost: number } }).usage.cost;
      const res = await get('/api/v1/key', key.secret);
      expect(res.status).toBe(200);
      const body = await res.text();
      expect(body).not.toContain(key.secret);
      expect(JSON.parse(body)).toEqual({
        data: {
          id: key.keyId,
          name: 'agent',
          label: `${key.prefix}…`,
          usage: cost,
          // Spent today, this week, this month: the one request (it is not midnight, Monday or the 1st in between).
          usage_daily: cost,
          usage_weekly: cost,
          usage_monthly: cost,
          byok_usage: 0,
          byok_usage_daily: 0,
          byok_usage_weekly: 0,
          byok_usage_monthly: 0,
          include_byok_in_limit: false,
          is_free_tier: false,
          is_management_key: false,
          is_provisioning_key: false,
          creator_user_id: null,
          limit: null,
          limit_reset: null,
          limit_usage: null,
          limit_remaining: null,
          rate_limit: { requests: 100, interval: '1m', note: expect.stringContaining('requests per minute') },
          rate_limits: { requests_per_minute: 100, tokens_per_minute: null, source: 'key' },
          expires_at: '2099-01-01T00:00:00.000Z',
          created_at: expect.any(String),
        },
      });
      expect(cost).toBeGreaterThan(0);
      expect((await get('/api/v1/key', 'sk-svc-unknown')).status).toBe(401);
    });

    it('a disabled key is refused until enabled; changes show at once; a revoked key cannot be changed', async () => {
      const key = await createKey(g.t.runtime, g.orgId, 'toggled');
      await caughtUp();
      await updateKey(g.t.runtime, key.keyId, {
        disabled: true,
        name: 'renamed',
        rateLimits: { tokensPerMinute: 5000 },
      });
      await caughtUp();
      expect((await chat(key.secret)).status).toBe(401);
      await updateKey(g.t.runtime, key.keyId, { disabled: false });
      await caughtUp();
      expect((await chat(key.secret)).status).toBe(200);
      const view = ((await (await get('/api/v1/key', key.secret)).json()) as { data: Record<string, unknown> }).data;
      expect(view).toMatchObject({
        name: 'renamed',
        rate_limits: { requests_per_minute: null, tokens_per_minute: 5000, source: 'key' },
      });
      await updateKey(g.t.runtime, key.keyId, { rateLimits: null });
      await revokeKey(g.t.runtime, key.keyId);
      await expect(updateKey(g.t.runtime, key.keyId, { disabled: false })).rejects.toThrow(IdentityRuleError);
      await expect(updateKey(g.t.runtime, g.keyId, {})).rejects.toThrow(/nothing to change/);
      await expect(updateKey(g.t.runtime, g.keyId, { expiresAt: 1 })).rejects.toThrow(/in the future/);
    });

    it('an expired key is refused 401 naming its expiry; a revoked key as one that never was', async () => {
      const key = await createKey(g.t.runtime, g.orgId, 'brief', { expiresAt: Date.now() + 300 });
      await caughtUp();
      const record = (await g.t.runtime.projections.keysOf(g.orgId)).find((k) => k.keyId === key.keyId)!;
      expect(keyStatus(record, record.expiresAt! - 1)).toBe('active');
      expect(keyStatus(record, record.expiresAt)).toBe('expired');
      // Polled, not slept: the key works until its time, then is refused.
      await eventually(async () => (await chat(key.secret)).status === 401, 15_000, 50);
      const expired = `API key expired at ${new Date(record.expiresAt!).toISOString()}`;
      const refused = (await (await chat(key.secret)).json()) as { error: { message: string; code: string } };
      expect(refused.error).toMatchObject({ message: expired, code: 'invalid_api_key' });
      const lookedUp = await get('/api/v1/key', key.secret);
      expect(lookedUp.status).toBe(401);
      expect(((await lookedUp.json()) as { error: { message: string } }).error.message).toBe(expired);
      // In the messages format too.
      const messages = await fetch(`${g.baseUrl}/api/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': key.secret, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
        body: JSON.stringify({ model: M.gpt.slug, max_tokens: 20, messages: [{ role: 'user', content: 'Hi' }] }),
      });
      expect(messages.status).toBe(401);
      expect(((await messages.json()) as { error: { message: string } }).error.message).toBe(expired);
      // Revoked (even once expired) and unknown keys get one answer.
      await revokeKey(g.t.runtime, key.keyId);
      const revoked = await createKey(g.t.runtime, g.orgId, 'gone');
      await revokeKey(g.t.runtime, revoked.keyId);
      await caughtUp();
      const unknown = `sk-svc-${'A'.repeat(44)}`;
      const answers = await Promise.all(
        [key.secret, revoked.secret, unknown].map(async (secret) => {
          const res = await chat(secret);
          return [res.status, await res.json()];
        }),
      );
      expect(answers[1]).toEqual(answers[2]);
      expect(answers[0]).toEqual(answers[2]);
      expect(answers[2]).toEqual([401, { error: expect.objectContaining({ message: 'invalid or revoked API key' }) }]);
    });

    it("GET /api/v1/generation: a request of the caller's organization by its id; another organization's is not found", async () => {
      const res = await chat(g.key);
      expect(res.status).toBe(200);
      // Passed whole from a chat-completions host: the reply's id is the host's own.
      const replyId = ((await res.json()) as { id: string }).id;
      const id = res.headers.get('x-request-id')!;
      const entry = await g.logged(id);
      const found = await get(`/api/v1/generation?id=${id}`, g.key);
      expect(found.status).toBe(200);
      expect(await found.json()).toEqual({
        data: {
          id,
          reservation_id: entry.reservationId,
          created_at: new Date(entry.time).toISOString(),
          surface: 'chat-completions',
          model: M.gpt.slug,
          host: 'fake-openai',
          key_id: g.keyId,
          status: 'ok',
          latency_ms: entry.latencyMs,
          tokens: { input: 20, cache_read: 0, cache_write: 0, output: 10 },
          hosted_tool_uses: {},
          cost: entry.cost / 1e9,
          cost_nano: entry.cost,
          refunded: 0,
          refunded_nano: 0,
          net_cost: entry.cost / 1e9,
          // Every count the host's own.
          provenance: { input: 'host', cache_read: 'host', cache_write: 'host', cache_write_1h: 'host', output: 'host' },
          total_cost: entry.cost / 1e9,
          usage: entry.cost / 1e9,
          request_id: id,
          upstream_id: replyId,
          omitted_tools: [],
          // Its one host call, the credential by its variable's name.
          attempts: [
            {
              host: 'fake-openai',
              credential: 'FAKE_OPENAI_KEY',
              status: null,
              reason: 'ok',
              duration_ms: entry.attempts![0].durationMs,
            },
          ],
          // This runtime's catalogue is built in code, not read from a file: no version.
          catalogue_version: null,
          provider_name: 'fake-openai',
          latency: entry.latencyMs,
          tokens_prompt: 20,
          tokens_completion: 10,
          native_tokens_prompt: 20,
          native_tokens_completion: 10,
          native_tokens_cached: 0,
          is_byok: false,
        },
      });
      const otherOrg = await fundedOrganization(g.t.runtime, 1);
      const stranger = await createKey(g.t.runtime, otherOrg, 'stranger');
      await caughtUp();
      const hidden = await get(`/api/v1/generation?id=${id}`, stranger.secret);
      expect(hidden.status).toBe(404);
      expect(await hidden.json()).toEqual({ error: { code: 404, message: expect.stringMatching(/^no request /) } });
      expect((await get('/api/v1/generation', g.key)).status).toBe(400);
    });

    it('GET /api/v1/generation: a request found by the id its client saw in the reply, ours or the host’s', async () => {
      g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Hi.', usage: { input: 9, output: 3 } } });
      // Translated (a chat client on a messages host): the reply's id is ours, made from the request's.
      const translated = await chatCompletion(g.baseUrl, g.key, { model: M.claude.slug, max_tokens: 20 });
      expect(translated.status).toBe(200);
      const ours = ((await translated.json()) as { id: string }).id;
      expect(ours).toMatch(/^chatcmpl-/);
      // Passed whole (a chat client on a chat host, streamed): the reply's id is the host's.
      const streamed = await chatCompletion(g.baseUrl, g.key, { stream: true, max_tokens: 20 });
      const hostId = /"id":"(chatcmpl-[^"]+)"/.exec(await streamed.text())![1];
      for (const [reply, res] of [
        [ours, translated],
        [hostId, streamed],
      ] as const) {
        const requestId = res.headers.get('x-request-id')!;
        await g.logged(requestId);
        const found = await get(`/api/v1/generation?id=${encodeURIComponent(reply)}`, g.key);
        expect(found.status).toBe(200);
        expect(((await found.json()) as { data: { id: string } }).data.id).toBe(requestId);
      }
      expect((await get('/api/v1/generation?id=chatcmpl-none', g.key)).status).toBe(404);
    });

    it('GET /api/v1/generation: the hosted tools left out of the call, recorded with the request', async () => {
      // Codex's default: web search offered on the Responses surface, to a model whose host runs none.
      const res = await fetch(`${g.baseUrl}/api/v1/responses`, {
        method: 'POST',
        headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: M.gpt.slug, input: 'hi', tools: [{ type: 'web_search' }] }),
      });
      expect(res.status).toBe(200);
      await res.text();
      const id = res.headers.get('x-request-id')!;
      expect((await g.logged(id)).omittedTools).toEqual(['web_search']);
      const found = (await (await get(`/api/v1/generation?id=${id}`, g.key)).json()) as { data: Record<string, unknown> };
      expect(found.data).toMatchObject({ id, surface: 'responses', status: 'ok', omitted_tools: ['web_search'] });
    });
  });
}

suite('keys, read models in this process', false);
describeWithRedis('keys', () => suite('read models in Redis', true));
