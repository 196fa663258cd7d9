import { auditLedger } from '../../src/audit/ledger-audit';
import { loadConfig } from '../../src/config/config';
import type { ReservationSettled } from '../../src/ledger/ledger.events';
import { openRuntime } from '../../src/runtime/runtime';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, TEST_MODELS } from '../support/gateway';
import { Child, eventually, startService } from '../support/processes';
import { openCountingStream } from '../support/streams';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { createKey } from '../support/keys';

/**
 * SIGTERM with 20 streams open, as a process manager stops the service: the streams finish within
 * the grace period, or are cut at its end and billed for what they delivered; every reservation is
 * settled before the log closes (none left to expire), the audit is clean, and the exit code is 0.
 */

const M = TEST_MODELS;
const STREAMS = 20;
const WORDS = 'one two three four five six seven eight nine ten eleven twelve'.split(' ');

let fake: FakeUpstream;
let t: TestRuntime;
let env: Record<string, string>;
let service: Child | null = null;

beforeAll(async () => {
  fake = await startFakeUpstream();
  // Long reservations, no sweeper in the test's own runtime: a reservation resolved is one the service settled.
  t = await openTestRuntime();
  env = serviceEnv(t, fake);
  await t.runtime.close();
});
afterAll(async () => {
  service?.process.kill('SIGKILL');
  await fake.close();
  await t.cleanup();
});

/** The service on the shared log, an organization and key made through the operator's runtime. */
async function start(grace: number, more: Record<string, string> = {}): Promise<{ base: string; secret: string; orgId: string }> {
  const operator = await openRuntime(loadConfig(env));
  const orgId = await fundedOrganization(operator, 100_000_000_000);
  const { secret } = await createKey(operator, orgId, 'stopping');
  await operator.close();
  const started = await startService({ ...env, SHUTDOWN_GRACE_MS: String(grace), ...more });
  service = started.service;
  return { base: started.base, secret, orgId };
}

/** After the service has gone: the log replayed by a fresh runtime. */
async function afterwards(orgId: string) {
  const runtime = await openRuntime(loadConfig(env));
  try {
    await runtime.projector.catchUp();
    const settled = (await runtime.events.readAll(0, 1_000_000)).filter(
      (e) => e.type === 'ReservationSettled' && (e.data as ReservationSettled['data']).orgId === orgId,
    ) as unknown as ReservationSettled[];
    return {
      balance: await runtime.projections.balance(orgId),
      settled,
      audit: await auditLedger(runtime.events, runtime.projections),
    };
  } finally {
    await runtime.close();
  }
}

it('SIGTERM with 20 streams open, all able to finish within the grace period: all complete, all billed in full, exit 0, audit clean', async () => {
  const { base, secret, orgId } = await start(20_000);
  fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: WORDS.slice(0, 6).join(' ') }, chunkDelayMs: 100 });
  const streams = await Promise.all(Array.from({ length: STREAMS }, () => openCountingStream(base, secret, M.gpt.slug)));
  service!.process.kill('SIGTERM');
  const endings = await Promise.all(streams.map((s) => s.ended));
  expect(endings).toEqual(Array(STREAMS).fill('completed'));
  expect(await service!.exited()).toBe(0);
  expect(service!.output()).toContain('model gateway stopped');

  const { balance, settled, audit } = await afterwards(orgId);
  expect(settled).toHaveLength(STREAMS);
  expect(settled.map((s) => s.data.status)).toEqual(Array(STREAMS).fill('ok'));
  expect(balance.reserved + balance.pending).toBe(0);
  expect(audit.differences).toEqual([]);
}, 60_000);

it('SIGTERM with 20 streams that would outlast the grace period: cut at its end, each settled for what it delivered, exit 0, audit clean', async () => {
  const grace = 1_000;
  const { base, secret, orgId } = await start(grace);
  // A word every 400 ms for about 5 s: still streaming when the grace period ends.
  fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: WORDS.join(' ') }, chunkDelayMs: 400 });
  const streams = await Promise.all(Array.from({ length: STREAMS }, () => openCountingStream(base, secret, M.gpt.slug)));
  const signalled = Date.now();
  service!.process.kill('SIGTERM');
  const endings = await Promise.all(streams.map((s) => s.ended));
  const cutAfter = Date.now() - signalled;
  expect(endings).toEqual(Array(STREAMS).fill('cut'));
  // Cut at the grace period's end, not at the streams' own end (about 5 s).
  expect(cutAfter).toBeGreaterThanOrEqual(grace - 50);
  expect(cutAfter).toBeLessThan(4_000);
  expect(await service!.exited()).toBe(0);

  const { balance, settled, audit } = await afterwards(orgId);
  // Every reservation settled by the stopping service (none left to expire), as a cut stream: what was delivered is billed.
  expect(settled).toHaveLength(STREAMS);
  for (const s of settled) {
    expect(s.data.status).toBe('client_abort');
    expect(s.data.outputTokens).toBeGreaterThan(0);
    expect(s.data.outputTokens).toBeLessThan(WORDS.length);
  }
  expect(balance.reserved + balance.pending).toBe(0);
  expect(audit.differences).toEqual([]);
}, 60_000);

it('SIGTERM with SHUTDOWN_DRAIN_MS: not ready at once, yet a new request is still served until the drain ends; then exit 0, audit clean', async () => {
  const { base, secret, orgId } = await start(5_000, { SHUTDOWN_DRAIN_MS: '4000' });
  fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'still here' } });
  service!.process.kill('SIGTERM');
  await eventually(async () => (await fetch(`${base}/health/ready`)).status === 503);
  // A load balancer that has not yet seen readiness fail sends one more, on a new connection.
  const late = await fetch(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json', connection: 'close' },
    body: JSON.stringify({ model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }], max_tokens: 8 }),
  });
  expect(late.status).toBe(200);
  expect(((await late.json()) as { choices: { message: { content: string } }[] }).choices[0].message.content).toBe('still here');
  expect(await service!.exited()).toBe(0);
  expect(service!.output()).toContain('still taking requests for 4000 ms');

  const { balance, settled, audit } = await afterwards(orgId);
  expect(settled.map((s) => s.data.status)).toEqual(['ok']);
  expect(balance.reserved + balance.pending).toBe(0);
  expect(audit.differences).toEqual([]);
}, 60_000);
