import fc from 'fast-check';
import { auditThenClose, startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { sseText, streamMessages, wholeReply } from '../support/upstream-arbitraries';

/**
 * Upstreams that send anything at all, through the whole gateway: random and adversarial stream
 * chunks and whole replies (the formats' shapes with bad usage values, other JSON, text that is
 * not JSON), to both surfaces, streamed and not, from hosts of both kinds. Every request gets a
 * reply or a provider error in its surface's format; the process keeps serving; every hold is
 * resolved and the ledger audit is clean.
 */

const ROUTES = [
  { surface: 'chat-completions', model: TEST_MODELS.gpt, kind: 'openai' },
  { surface: 'messages', model: TEST_MODELS.claude, kind: 'anthropic' },
  { surface: 'chat-completions', model: TEST_MODELS.claude, kind: 'anthropic' },
  { surface: 'messages', model: TEST_MODELS.gpt, kind: 'openai' },
] as const;

async function ask(g: TestGateway, route: (typeof ROUTES)[number], stream: boolean): Promise<{ status: number; body: string }> {
  const messages = [{ role: 'user', content: 'Say something.' }];
  const res =
    route.surface === 'chat-completions'
      ? await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ model: route.model.slug, messages, stream }),
        })
      : await fetch(`${g.baseUrl}/api/v1/messages`, {
          method: 'POST',
          headers: { 'x-api-key': g.key, 'anthropic-version': '2023-06-01', 'content-type': 'application/json' },
          body: JSON.stringify({ model: route.model.slug, max_tokens: 500, messages, stream }),
        });
  return { status: res.status, body: await res.text() };
}

describe('the gateway under upstreams that send anything', () => {
  let g: TestGateway;
  const statuses = new Map<number, number>();

  beforeAll(async () => {
    g = await startGateway({ redis: true });
  });
  afterAll(async () => {
    const report = await auditThenClose(g);
    expect(report.settlements + report.releases).toBe(report.reservations);
  });

  it('answers every request with a reply or a provider error, and keeps serving', async () => {
    const upstream = fc.integer({ min: 0, max: ROUTES.length - 1 }).chain((r) =>
      fc.record({
        route: fc.constant(r),
        stream: fc.boolean(),
        messages: streamMessages(ROUTES[r].kind),
        terminated: fc.boolean(),
        whole: wholeReply(ROUTES[r].kind),
      }),
    );
    await fc.assert(
      fc.asyncProperty(upstream, async ({ route: r, stream, messages, terminated, whole }) => {
        const route = ROUTES[r];
        const body = stream ? sseText(messages, route.kind, terminated) : whole;
        g.fake.on(route.model.hostModel, { kind: 'verbatim', body });
        const answer = await ask(g, route, stream);
        statuses.set(answer.status, (statuses.get(answer.status) ?? 0) + 1);
        // A reply (200, possibly ending in an in-stream error), or the provider's failure.
        expect([200, 502]).toContain(answer.status);
        if (answer.status === 502) {
          const error = JSON.parse(answer.body);
          if (route.surface === 'messages') expect(error).toMatchObject({ type: 'error', error: { type: 'api_error' } });
          else expect(error).toMatchObject({ error: { code: 'provider_error' } });
        }
      }),
      { numRuns: 300 },
    );
    // Both outcomes were exercised: the fuzz is not all refusals, nor all replies.
    expect(statuses.get(200)).toBeGreaterThan(10);
    expect(statuses.get(502)).toBeGreaterThan(10);

    g.fake.on(TEST_MODELS.gpt.hostModel, { kind: 'reply', reply: { text: 'still here', usage: { input: 10, output: 3 } } });
    const after = await ask(g, ROUTES[0], false);
    expect(after.status).toBe(200);
    expect(JSON.parse(after.body).choices[0].message.content).toBe('still here');
  });
});
