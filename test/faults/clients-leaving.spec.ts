import type { ReservationSettled } from '../../src/ledger/ledger.events';
import { PLAIN_GPT, plainGptModel, startGateway, testCatalogueWith, TEST_MODELS, TestGateway } from '../support/gateway';
import { chatCompletion } from '../support/streams';
import { LogCapture } from '../support/log-capture';
import { eventually } from '../support/processes';

/**
 * A thousand clients leaving mid-stream at once: every upstream call stopped, every reservation
 * settled for what was delivered (or released), nothing left held, the ledger audit clean. On a
 * model that does not reason: a reasoning model's call is read to its end instead (billing.spec.ts).
 */

const M = TEST_MODELS;
const CLIENTS = 1000;
let g: TestGateway;

beforeAll(async () => {
  g = await startGateway({ catalogue: testCatalogueWith(plainGptModel()) });
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
        body: JSON.stringify({ model: PLAIN_GPT.slug, stream: true, messages: [{ role: 'user', content: 'Count' }] }),
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
  // A thousand streams through one process with its clients and host: on a slow shared machine, past the 30 s default.
}, 120_000);

it('clients that leave while their requests are admitted: nothing billed, every reservation released', async () => {
  const log = new LogCapture();
  const h = await startGateway({ logStream: log });
  try {
    // Admission held at authentication until both clients have gone.
    const identity = h.t.runtime.identity;
    const authenticate = identity.authenticate.bind(identity);
    let entered = 0;
    let bothIn: () => void = () => {};
    const inAdmission = new Promise<void>((resolve) => (bothIn = resolve));
    let release: () => void = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    identity.authenticate = async (secret) => {
      if (++entered === 2) bothIn();
      await gate;
      return authenticate(secret);
    };
    h.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Never read.' } });
    const controllers = [new AbortController(), new AbortController()];
    const sent = [false, true].map((stream, i) =>
      chatCompletion(h.baseUrl, h.key, { stream }, { signal: controllers[i].signal }).catch(() => 'aborted'),
    );
    await inAdmission;
    for (const controller of controllers) controller.abort();
    expect(await Promise.all(sent)).toEqual(['aborted', 'aborted']);
    // The gateway has seen both go (each gets its 499 line), then admission goes on.
    await eventually(() => log.lines.filter((l) => l.msg === 'request' && l.status === 499).length === 2);
    release();
    await eventually(async () => {
      const events = await h.t.runtime.events.readAll(0, 100_000);
      return events.filter((e) => e.type === 'ReservationReleased' || e.type === 'ReservationSettled').length === 2;
    });
    await h.settled();
    const events = await h.t.runtime.events.readAll(0, 100_000);
    const settled = events.filter((e) => e.type === 'ReservationSettled') as unknown as ReservationSettled[];
    expect(settled.reduce((sum, e) => sum + e.data.amount, 0)).toBe(0);
    expect((await h.t.runtime.projections.balance(h.orgId)).spent).toBe(0);
    expect((await h.audit()).differences).toEqual([]);
  } finally {
    await h.close();
  }
});
