import { join } from 'node:path';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { LEDGER_CHAIN } from '../../src/ledger/ledger-chain';
import { operatorTool as cli, operatorToolJson as json } from '../support/operator-tool';
import { tempDir } from '../support/temp';

describe('operator tool: credit notes', () => {
  const dir = tempDir('cli-credit-notes');
  const env = { DATA_DIR: dir.path, REDIS_URL: '' };
  afterAll(() => dir.cleanup());

  it('refunds a generation (by its request id) and adjusts the balance, each once per idempotency key', async () => {
    const { orgId } = await json(env, ['org', 'create', '--name', 'Refunded']);
    await json(env, ['credits', 'grant', '--org', orgId, '--amount', '1']);
    const { keyId } = await json(env, ['keys', 'create', '--org', orgId, '--name', 'k']);
    // A generation charged 20 nano-credits (10 + 10 tokens at 1 credit per million).
    // Written as the service's log writes (its ledger events chained), so the audit finds it whole.
    const store = new SqliteEventStore(join(dir.path, 'events.sqlite'), { chain: LEDGER_CHAIN });
    const facts = { requestId: 'req-77', keyId, surface: 'chat-completions', model: 'm', reservationId: 'r-77', orgId };
    await store.append(
      'reservation-r-77',
      [{ type: 'CreditsReserved', data: { ...facts, amount: 1000, reservedAt: 1, expiresAt: 2 } }],
      'no_stream',
    );
    await store.append(
      'reservation-r-77',
      [
        {
          type: 'ReservationSettled',
          data: {
            ...facts,
            host: 'h',
            hostModel: 'hm',
            inputTokens: 10,
            outputTokens: 10,
            prices: { input: 1e6, output: 1e6 },
            amount: 20,
            held: 1000,
            status: 'ok',
            latencyMs: 1,
            settledAt: 2,
          },
        },
      ],
      0,
    );
    await store.close();

    const refund = (amount: string, key: string) => [
      'credits',
      'refund',
      '--org',
      orgId,
      '--generation',
      'req-77',
      '--amount',
      amount,
      '--reason',
      'provider_outage',
      '--idempotency-key',
      key,
      '--memo',
      'outage 11-26',
    ];
    const first = await cli(env, refund('0.000000015', 'inc-1'));
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toMatch(
      /^issued credit note [0-9a-f-]{36}: refund of 0\.000000015 credits for generation r-77 \(provider_outage\)\n$/,
    );
    const again = await json(env, refund('0.000000015', 'inc-1'));
    expect(again).toMatchObject({
      kind: 'refund',
      generation: 'r-77',
      key_id: keyId,
      amount: '0.000000015',
      amount_nano: 15,
      already_issued: true,
      memo: 'outage 11-26',
      issued_by: 'cli',
    });

    const above = await cli(env, refund('0.000000006', 'inc-2'));
    expect(above.code).toBe(1);
    expect(above.stderr).toMatch(
      /was charged 0\.00000002 credits, 0\.000000015 already refunded: at most 0\.000000005 credits can still be refunded/,
    );
    // The rest, by its reservation id, with no amount.
    const rest = await json(env, [
      'credits',
      'refund',
      '--org',
      orgId,
      '--generation',
      'r-77',
      '--reason',
      'dispute',
      '--idempotency-key',
      'inc-3',
    ]);
    expect(rest).toMatchObject({ amount_nano: 5, already_issued: false });

    expect(
      (await cli(env, ['credits', 'adjust', '--org', orgId, '--amount', '-0.5', '--reason', 'bad', '--idempotency-key', 'a']))
        .code,
    ).toBe(2);
    const debit = await json(env, [
      'credits',
      'adjust',
      '--org',
      orgId,
      '--amount',
      '-0.25',
      '--reason',
      'correction',
      '--idempotency-key',
      'adj-1',
    ]);
    expect(debit).toMatchObject({ kind: 'adjustment', generation: null, key_id: null, amount: '-0.25' });
    const tooMuch = await cli(env, [
      'credits',
      'adjust',
      '--org',
      orgId,
      '--amount',
      '-5',
      '--reason',
      'correction',
      '--idempotency-key',
      'adj-2',
    ]);
    expect(tooMuch.code).toBe(1);
    expect(tooMuch.stderr).toMatch(/a debit of 5 credits is more than the 0\.75 credits available/);

    // 1 granted − 0.25 debited; 20 charged − 20 refunded.
    expect(await json(env, ['credits', 'show', '--org', orgId])).toMatchObject({
      granted: '0.75',
      spent: '0',
      available: '0.75',
    });
    const [key] = await json(env, ['keys', 'list', '--org', orgId]);
    expect(key).toMatchObject({ keyId, spent: '0' });
    const audit = await json(env, ['ledger', 'audit']);
    expect(audit).toMatchObject({ clean: true, creditNotes: 3 });
  });

  it('lists an organization’s notes with who issued each, marking those the operator did not (a dashboard user’s, from before notes were the operator’s alone)', async () => {
    const { orgId } = await json(env, ['org', 'create', '--name', 'Noted']);
    await json(env, ['credits', 'grant', '--org', orgId, '--amount', '1']);
    await json(env, [
      'credits',
      'adjust',
      '--org',
      orgId,
      '--amount',
      '0.5',
      '--reason',
      'goodwill',
      '--idempotency-key',
      'op-1',
    ]);
    const { userId } = await json(env, ['users', 'create', '--email', 'owner@example.com', '--password-stdin'], 'a password');
    await json(env, ['org', 'add-member', '--org', orgId, '--email', 'owner@example.com', '--role', 'owner']);
    const { keyId } = await json(env, ['keys', 'create', '--org', orgId, '--name', 'billing', '--management', '--billing']);
    // As the dashboard (an owner's user id) and the management API (a key's id) recorded their notes.
    const store = new SqliteEventStore(join(dir.path, 'events.sqlite'), { chain: LEDGER_CHAIN });
    const note = (creditNoteId: string, issuedBy: string, amount: number) => ({
      type: 'CreditNoteIssued',
      data: {
        orgId,
        creditNoteId,
        idempotencyKey: creditNoteId,
        kind: 'adjustment',
        reservationId: null,
        keyId: null,
        amount,
        reason: 'goodwill',
        issuedBy,
        issuedAt: Date.UTC(2026, 10, 20),
      },
    });
    await store.append(
      `credits-${orgId}`,
      [note('from-dashboard', userId, 5_000_000_000), note('from-key', keyId, 1_000)],
      'any',
    );
    await store.close();

    const listed = await json(env, ['credits', 'notes', '--org', orgId]);
    expect(listed.unexpected).toBe(1);
    expect(listed.notes.map((n: { issuer: object; amount: string }) => [n.amount, n.issuer])).toEqual([
      ['0.5', { kind: 'operator', unexpected: false }],
      ['5', { kind: 'dashboard_user', userId, email: 'owner@example.com', unexpected: true }],
      ['0.000001', { kind: 'management_key', keyId, madeBy: { kind: 'operator' }, unexpected: false }],
    ]);
    const lines = (await cli(env, ['credits', 'notes', '--org', orgId])).stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/adjustment {2}\+0\.5 {2}goodwill {2}by the operator tool$/);
    expect(lines[1]).toMatch(
      /adjustment {2}\+5 {2}goodwill {2}by dashboard user \S+ <owner@example\.com> {2}\(not the operator’s\)$/,
    );
    expect(lines[2]).toMatch(new RegExp(`by management key ${keyId} \\(made by the operator\\)$`));
    expect(lines[3]).toBe('3 credit notes, 1 not issued by the operator or a key the operator made');
    expect((await cli(env, ['credits', 'notes', '--org', '00000000-0000-4000-8000-000000000000'])).stderr).toMatch(
      /no organization/,
    );
  });
});
