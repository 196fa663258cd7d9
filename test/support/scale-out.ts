import type { RecordedEvent } from '../../src/eventstore/event-store';
import { FakeUpstream } from './fake-upstream';
import { TEST_MODELS } from './gateway';
import { createKey } from './keys';
import { operatorToolJson } from './operator-tool';
import { Child, eventually, startService } from './processes';
import { fundedOrganization, TestRuntime } from './runtime';

/**
 * The scale-out runs' common parts: gateway processes sharing one log and one set of read models,
 * asked as a client asks, and what must hold of an organization's ledger once the traffic is over.
 */

/** A chat completion on `test/gpt` with `key`: the status it was answered with (the body read to the end). */
export const ask = (base: string, key: string): Promise<number> =>
  fetch(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: TEST_MODELS.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
  }).then(async (response) => (await response.text(), response.status));

/**
 * As a client that takes 503 ("unavailable, nothing held or billed: try again") at its word asks:
 * again after a growing pause (50 ms doubling to 1 s) until another answer comes. The final status,
 * and how many 503s it met on the way.
 */
export async function askUntilAnswered(base: string, key: string): Promise<{ status: number; unavailable: number }> {
  for (let unavailable = 0; ; unavailable++) {
    const status = await ask(base, key);
    if (status !== 503) return { status, unavailable };
    await new Promise((resolve) => setTimeout(resolve, Math.min(1_000, 50 * 2 ** unavailable)));
  }
}

/** `count` gateway processes on `env`, started one after the other (several starting at once on a loaded machine outlast a start's budget). */
export async function startGateways(env: Record<string, string>, count: number): Promise<{ services: Child[]; bases: string[] }> {
  const services: Child[] = [];
  const bases: string[] = [];
  try {
    for (let i = 0; i < count; i++) {
      const started = await startService(env);
      services.push(started.service);
      bases.push(started.base);
    }
  } catch (error) {
    await stopGateways(services);
    throw error;
  }
  return { services, bases };
}

export async function stopGateways(services: Child[]): Promise<void> {
  for (const service of services) service.process.kill('SIGKILL');
  await Promise.all(services.map((service) => service.exited()));
}

/**
 * What one request reserves (its hold): one served through `base` on an organization of its own,
 * read from the log. The fake answers `test/gpt` at once afterwards, until told otherwise.
 */
export async function reservePerRequest(t: TestRuntime, fake: FakeUpstream, base: string): Promise<number> {
  fake.on(TEST_MODELS.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
  const probeOrg = await fundedOrganization(t.runtime, 100_000_000_000);
  const probeKey = (await createKey(t.runtime, probeOrg, 'probe')).secret;
  const status = await ask(base, probeKey);
  if (status !== 200) throw new Error(`the probe request was answered ${status}`);
  const [reserved] = await eventsOf(t, probeOrg, 'CreditsReserved');
  if (!reserved) throw new Error('the probe request reserved nothing');
  return (reserved.data as { amount: number }).amount;
}

/** The organization's events of `type`, in log order. */
export async function eventsOf(t: TestRuntime, orgId: string, type: string): Promise<RecordedEvent[]> {
  const events = await t.runtime.events.readAll(0, 10_000_000);
  return events.filter((e) => e.type === type && (e.data as { orgId?: string }).orgId === orgId);
}

/**
 * Nothing lost: once the read models have caught up, nothing of the organization is held or pending,
 * what it spent is the sum of its settlements' charges, and the operator tool's audit (balances,
 * keys' spend, every charge recomputed) finds no difference. Returns the organization's settlements.
 */
export async function expectNothingLost(t: TestRuntime, orgId: string): Promise<RecordedEvent[]> {
  await eventually(async () => {
    await t.runtime.projector.catchUp();
    const balance = await t.runtime.projections.balance(orgId);
    return balance.reserved === 0 && balance.pending === 0;
  }, 20_000);
  const settlements = await eventsOf(t, orgId, 'ReservationSettled');
  const charged = settlements.reduce((sum, e) => sum + (e.data as { amount: number }).amount, 0);
  expect((await t.runtime.projections.balance(orgId)).spent).toBe(charged);
  const report = (await operatorToolJson(t.env, ['ledger', 'audit'])) as { clean: boolean; differences: unknown[] };
  expect(report.differences).toEqual([]);
  expect(report.clean).toBe(true);
  return settlements;
}
