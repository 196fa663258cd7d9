import { auditLedger } from '../../src/audit/ledger-audit';
import { loadConfig } from '../../src/config/config';
import type { ReservationProgress, ReservationSettled } from '../../src/ledger/ledger.events';
import { settledCharge } from '../../src/ledger/ledger.events';
import { chargeFor } from '../../src/ledger/money';
import { openRuntime, Runtime } from '../../src/runtime/runtime';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, TEST_MODELS } from '../support/gateway';
import { Child, eventually, startService } from '../support/processes';
import { chatCompletion, openCountingStream } from '../support/streams';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { createKey } from '../support/keys';

/**
 * The gateway itself SIGKILLed with streams in flight, then started again on the same log: the
 * clients see their connection end (never a hang), and the holds of the requests it was serving
 * expire: released when nothing of them was recorded, billed from their last recorded progress
 * when they had delivered for longer than PROGRESS_INTERVAL_MS — nothing billed twice, nothing
 * left held, the audit clean.
 */

const M = TEST_MODELS;
const STREAMS = 20;
// Short reservations, swept often: the holds of the killed process's requests expire within the test.
const TIMING = { REQUEST_TIMEOUT_MS: '2000', RESERVATION_TTL_MS: '2500', PENDING_HOLD_MS: '2500', SWEEP_INTERVAL_MS: '50' };

let fake: FakeUpstream;
let t: TestRuntime;
let env: Record<string, string>;
let service: Child | null = null;

async function serve(): Promise<string> {
  const started = await startService(env);
  service = started.service;
  return started.base;
}

beforeAll(async () => {
  fake = await startFakeUpstream();
  t = await openTestRuntime({ env: TIMING });
  env = serviceEnv(t, fake, TIMING);
});
afterAll(async () => {
  service?.process.kill('SIGKILL');
  await fake.close();
  await t.cleanup();
});

it('20 streams in flight when the gateway is SIGKILLed before their first progress: their connections end, and after a restart every hold is released; audit clean', async () => {
  const orgId = await fundedOrganization(t.runtime, 100_000_000_000);
  const { secret } = await createKey(t.runtime, orgId, 'killed');
  await t.runtime.close();

  let base = await serve();
  // A slow stream: a piece every 200 ms, so every request is mid-stream when the process dies.
  fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'one two three four five six seven eight' }, chunkDelayMs: 200 });
  const streams = Array.from({ length: STREAMS }, () => openCountingStream(base, secret, M.gpt.slug));
  const open = await Promise.all(streams);
  service!.process.kill('SIGKILL');
  await service!.exited();
  // Every client learns at once that its stream is over: none completed, none hangs.
  const endings = await Promise.all(open.map((s) => s.ended));
  expect(endings).toEqual(Array(STREAMS).fill('cut'));

  base = await serve();
  const restarted = await openRuntime(loadConfig({ ...env }), { sweep: false });
  try {
    await eventually(async () => {
      await restarted.projector.catchUp();
      const balance = await restarted.projections.balance(orgId);
      return balance.reserved === 0 && balance.pending === 0;
    }, 20_000);
    const balance = await restarted.projections.balance(orgId);
    // Nothing was settled by the killed process: every hold expired and was released.
    expect(balance.spent).toBe(0);
    const report = await auditLedger(restarted.events, restarted.projections);
    expect(report.differences).toEqual([]);
    // The restarted gateway serves.
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Back.' } });
    const again = await fetch(`${base}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
      body: JSON.stringify({ model: M.gpt.slug, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    expect(again.status).toBe(200);
  } finally {
    await restarted.close();
  }
});

/** Every event of the request's reservation in the log. */
async function reservationEvents(runtime: Runtime, requestId: string) {
  const events = await runtime.events.readAll(0, 100_000);
  return events.filter((e) => (e.data as { requestId?: string }).requestId === requestId);
}

it('a stream that delivered text for several intervals, then SIGKILL: after a restart its expiry bills at least what its last progress recorded; audit clean', async () => {
  service?.process.kill('SIGKILL');
  await service?.exited();
  const reader = await openRuntime(loadConfig({ ...env }), { sweep: false });
  try {
    const orgId = await fundedOrganization(reader, 100_000_000_000);
    const { secret } = await createKey(reader, orgId, 'progress');
    const INTERVAL_MS = 250;
    const started = await startService({ ...env, PROGRESS_INTERVAL_MS: String(INTERVAL_MS) });
    service = started.service;
    // 40 words of 7 characters, one every 50 ms: 2 s of text, five words an interval.
    const words = Array.from({ length: 40 }, (_, i) => `word${String(i).padStart(2, '0')} `);
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: words.join('') }, chunkDelayMs: 50 });
    const res = await chatCompletion(started.base, secret, { stream: true });
    const requestId = res.headers.get('x-request-id')!;
    const body = res.body!.getReader();
    let text = '';
    const reading = (async () => {
      try {
        for (;;) {
          const { value, done } = await body.read();
          if (done) return;
          for (const [, piece] of new TextDecoder().decode(value).matchAll(/"content":"([^"]*)"/g)) text += piece;
        }
      } catch {
        // The connection cut by the kill.
      }
    })();
    // Delivering for longer than one interval: its progress is in the log, more than once.
    await eventually(async () => {
      const events = await reservationEvents(reader, requestId);
      return events.filter((e) => e.type === 'ReservationProgress').length >= 2;
    }, 10_000);
    started.service.process.kill('SIGKILL');
    await started.service.exited();
    await reading;
    const delivered = text.length;
    expect(delivered).toBeGreaterThan(0);
    expect(delivered).toBeLessThan(words.join('').length);

    const restarted = await startService({ ...env, PROGRESS_INTERVAL_MS: String(INTERVAL_MS) });
    service = restarted.service;
    await eventually(async () => {
      await reader.projector.catchUp();
      const balance = await reader.projections.balance(orgId);
      return balance.reserved === 0 && balance.pending === 0;
    }, 20_000);
    const events = await reservationEvents(reader, requestId);
    const progress = events.filter((e) => e.type === 'ReservationProgress').map((e) => e.data as ReservationProgress['data']);
    const last = progress[progress.length - 1];
    const resolution = events[events.length - 1];
    expect(resolution.type).toBe('ReservationSettled');
    const settled = resolution.data as ReservationSettled['data'];
    expect(settled).toMatchObject({
      status: 'interrupted',
      host: 'fake-openai',
      outputTokens: last.outputTokens,
      interrupted: { progressAt: last.recordedAt, deliveredChars: last.deliveredChars },
    });
    expect(last.outputTokens).toBeGreaterThan(0);
    // Billed at least what the last progress recorded, exactly as its event says.
    expect(settled.amount).toBeGreaterThanOrEqual(chargeFor({ ...last }, last.prices));
    expect(settled.amount).toBe(settledCharge(settled));
    expect(settled.amount).toBeLessThanOrEqual(settled.held);
    // What went unbilled: the text delivered after the last progress, within about an interval's worth (five words).
    expect(last.deliveredChars).toBeLessThanOrEqual(delivered);
    expect(delivered - last.deliveredChars).toBeLessThanOrEqual(2 * 5 * 7);
    expect((await reader.projections.balance(orgId)).spent).toBe(settled.amount);
    const logged = (await reader.projections.recentRequests(orgId, 10)).find((e) => e.requestId === requestId);
    expect(logged).toMatchObject({ status: 'interrupted', cost: settled.amount, outputTokens: last.outputTokens });
    const report = await auditLedger(reader.events, reader.projections);
    expect(report.differences).toEqual([]);
    expect(report.interruptedSettlements).toBe(1);
  } finally {
    await reader.close();
  }
});
