import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';

/**
 * A thousand clients leaving mid-stream at once: every upstream call stopped, every reservation
 * settled for what was delivered (or released), nothing left held, the ledger audit clean.
 */

const M = TEST_MODELS;
const CLIENTS = 1000;
let g: TestGateway;

beforeAll(async () => {
  g = await startGateway();
});
afterAll(() => g.close());

it('1,000 streams cut by their clients after the first text: all settled, none held, audit clean', async () => {
  // A slow stream (a piece every 200 ms): every client is still reading when it leaves.
  g.fake.on(M.gpt.hostModel, {
    kind: 'reply',
    reply: { text: 'one two three four five six seven eight nine ten' },
    chunkDelayMs: 200,
  });
  const before = g.fake.requests.length;
  const cut = await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      const controller = new AbortController();
      const res = await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        signal: controller.signal,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${g.key}` },
        body: JSON.stringify({ model: M.gpt.slug, stream: true, messages: [{ role: 'user', content: 'Count' }] }),
      });
      const reader = res.body!.getReader();
      let seen = '';
      while (!seen.includes('"content":"one"')) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += new TextDecoder().decode(value);
      }
      controller.abort();
      return seen.includes('"content":"one"');
    }),
  );
  expect(cut.filter(Boolean)).toHaveLength(CLIENTS);
  // Every upstream call was stopped (the fake sees each connection closed by the gateway).
  await Promise.all(Array.from({ length: CLIENTS }, (_, i) => g.fake.closed(before + i)));
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  const balance = await g.t.runtime.projections.balance(g.orgId);
  expect(balance).toMatchObject({ reserved: 0, pending: 0 });
  // Each was billed what it had delivered: some output, never the whole reply's.
  const entries = await g.t.runtime.projections.recentRequests(g.orgId, CLIENTS);
  expect(entries.filter((e) => e.status === 'client_abort')).toHaveLength(CLIENTS);
  expect(entries.every((e) => e.outputTokens > 0 && e.cost > 0)).toBe(true);
});
