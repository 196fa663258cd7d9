import { loadConfig } from '../../src/config/config';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { LEDGER_CHAIN } from '../../src/ledger/ledger-chain';
import type { CreditsReserved } from '../../src/ledger/ledger.events';
import { LedgerService } from '../../src/ledger/ledger.service';
import { formatCredits } from '../../src/ledger/money';
import { eventLogPath } from '../../src/runtime/runtime';
import { auditThenClose, startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { raceForCredit } from '../support/credit-race';
import { operatorToolJson as json } from '../support/operator-tool';
import { testRedisUrl } from '../support/redis';

/**
 * Credits granted by another process are in the log before the read models this service answers
 * from hold them: the service looks at the log for other processes' events only every LOG_POLL_MS,
 * 10 s here, far longer than the tests wait. A request the balance they show does not cover must not
 * be refused for that: it catches up with the log first, then asks the ledger again; a balance that
 * truly does not cover it is refused promptly all the same.
 *
 * In-process read models are each process's own: the operator tool's grant reaches this service's
 * only when it reads the log. Read models in Redis are shared, and the tool applies its own grant to
 * them before it exits, nearly always; what is left is a writer whose event no follower has applied
 * yet (the tool ending first, a worker busy): here, a second connection to the log that nothing follows.
 */

const M = TEST_MODELS;

for (const redis of [false, true]) {
  const enabled = !redis || Boolean(testRedisUrl());
  const mode = redis ? 'Redis' : 'in-process';
  (enabled ? describe : describe.skip)(`credits granted by another process (${mode} read models)`, () => {
    let g: TestGateway;
    beforeAll(async () => {
      g = await startGateway({ redis, env: { LOG_POLL_MS: '10000' } });
    });
    afterAll(async () => {
      await auditThenClose(g);
    });

    const ask = (key: string) =>
      fetch(`${g.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
        body: JSON.stringify({ model: M.gpt.slug, max_tokens: 100, messages: [{ role: 'user', content: 'Hi' }] }),
      });

    /** An organization with no credit and a key, known to the read models. */
    const unfunded = async (name: string) => {
      const { orgId } = await g.t.runtime.identity.createOrganization(name);
      const { secret } = await createKey(g.t.runtime, orgId, 'tests');
      await g.t.runtime.projector.catchUp();
      return { orgId, secret };
    };

    /**
     * Grants `nano` to the organization from another process, unseen by the read models this service
     * answers from: the operator tool (in-process read models), or a writer no follower has caught up
     * with (Redis, see above).
     */
    const grantUnseen = async (orgId: string, nano: number) => {
      if (!redis) await json(g.t.env, ['credits', 'grant', '--org', orgId, '--amount', formatCredits(nano)]);
      else {
        const log = new SqliteEventStore(eventLogPath(loadConfig(g.t.env)), { pollIntervalMs: 10_000, chain: LEDGER_CHAIN });
        try {
          const { reservationTtlMs, pendingHoldMs } = g.t.runtime.config;
          const elsewhere = new LedgerService(log, g.t.runtime.projections, { reservationTtlMs, pendingHoldMs });
          await elsewhere.grant(orgId, nano, 'granted elsewhere');
        } finally {
          await log.close();
        }
      }
      expect((await g.t.runtime.projections.balance(orgId)).granted).toBe(0);
    };

    /** What one request of `ask` reserves, as the ledger recorded it. */
    const reservedByOne = async () => {
      const probe = await ask(g.key);
      await probe.text();
      expect(probe.status).toBe(200);
      const requestId = probe.headers.get('x-request-id');
      const events = await g.t.runtime.events.readAll(0, 100_000);
      const reserved = events.find(
        (e) => e.type === 'CreditsReserved' && (e.data as CreditsReserved['data']).requestId === requestId,
      )!;
      return (reserved.data as CreditsReserved['data']).amount;
    };

    it('spends credits another process granted on the very next request', async () => {
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      const { orgId, secret } = await unfunded('Granted elsewhere');
      const before = await ask(secret);
      expect(before.status).toBe(402);
      await before.text();

      await grantUnseen(orgId, 1_000_000_000);
      const res = await ask(secret);
      expect(res.status).toBe(200);
      const reply = (await res.json()) as { choices: Array<{ message: { content: string } }> };
      expect(reply.choices[0].message.content).toBe('Hello.');
    });

    if (redis)
      it('spends credits the operator tool granted on the very next request', async () => {
        g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
        const { orgId, secret } = await unfunded('Granted by the tool');
        await json(g.t.env, ['credits', 'grant', '--org', orgId, '--amount', '1']);
        const res = await ask(secret);
        expect(res.status).toBe(200);
        await res.text();
      });

    it('admits exactly what a grant made a moment ago covers, however many ask at once: no credit held twice', async () => {
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      const amount = await reservedByOne();
      const { orgId, secret } = await unfunded('Granted elsewhere, raced');
      // Enough for exactly 3 holds at once; the host holds its replies until all are decided.
      await grantUnseen(orgId, 4 * amount - 1);
      const answers = await raceForCredit(g.fake, M.gpt.hostModel, 8, () =>
        ask(secret).then(async (r) => (await r.text(), { status: r.status })),
      );
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(3);
      expect(statuses.filter((s) => s === 402)).toHaveLength(5);
      await g.settled();
      const balance = await g.t.runtime.projections.balance(orgId);
      expect(balance).toMatchObject({ granted: 4 * amount - 1, reserved: 0, pending: 0 });
      expect(balance.spent).toBeLessThanOrEqual(3 * amount);
    });

    it('refuses a balance that does not cover the request once caught up, and promptly when the log does not answer', async () => {
      g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      const { secret } = await unfunded('Not granted');
      const catchUps = jest.spyOn(g.t.runtime.projector, 'catchUpNow');
      try {
        const res = await ask(secret);
        expect(res.status).toBe(402);
        const { error } = (await res.json()) as { error: { message: string } };
        expect(error.message).toMatch(/^insufficient credits: 0 credits available/);
        expect(catchUps).toHaveBeenCalledTimes(1);

        // A catch-up that never ends (the log does not answer): the refusal waits for it 1 s at most.
        catchUps.mockReturnValue(new Promise<void>(() => undefined));
        const started = performance.now();
        const stuck = await ask(secret);
        const waited = performance.now() - started;
        expect(stuck.status).toBe(402);
        await stuck.text();
        expect(catchUps).toHaveBeenCalledTimes(2);
        expect(waited).toBeGreaterThanOrEqual(950);
        expect(waited).toBeLessThan(3_000);
      } finally {
        catchUps.mockRestore();
      }
    });
  });
}
