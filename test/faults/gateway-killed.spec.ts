import { auditLedger } from '../../src/audit/ledger-audit';
import { loadConfig } from '../../src/config/config';
import { openRuntime } from '../../src/runtime/runtime';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, TEST_MODELS } from '../support/gateway';
import { Child, eventually, startService } from '../support/processes';
import { openCountingStream } from '../support/streams';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { createKey } from '../support/keys';

/**
 * The gateway itself SIGKILLed with streams in flight, then started again on the same log: the
 * clients see their connection end (never a hang), and the holds of the requests it was serving
 * expire and are released — nothing billed twice, nothing left held, the audit clean.
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

it('20 streams in flight when the gateway is SIGKILLed: their connections end, and after a restart every hold is released; audit clean', async () => {
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
