import { join } from 'node:path';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { operatorTool as cli, operatorToolJson as json } from '../support/operator-tool';
import { describeWithRedis, testRedisUrl, uniquePrefix } from '../support/redis';
import { openTestRuntime } from '../support/runtime';
import { tempDir } from '../support/temp';

describe('operator tool', () => {
  const dir = tempDir('cli');
  const env = { DATA_DIR: dir.path, REDIS_URL: '' };
  afterAll(() => dir.cleanup());

  it('manages organizations, credits, keys and users end to end', async () => {
    const { orgId } = await json(env, ['org', 'create', '--name', 'Acme']);
    expect(orgId).toMatch(/^[0-9a-f-]{36}$/);

    const plain = await cli(env, ['credits', 'grant', '--org', orgId, '--amount', '12.50', '--reason', 'welcome']);
    expect(plain).toMatchObject({ code: 0, stdout: `granted 12.5 credits to ${orgId}\n` });
    expect(await json(env, ['credits', 'show', '--org', orgId])).toEqual({
      orgId,
      granted: '12.5',
      spent: '0',
      reserved: '0',
      available: '12.5',
    });

    const key = await json(env, ['keys', 'create', '--org', orgId, '--name', 'ci']);
    expect(key.secret).toMatch(/^sk-svc-[A-Za-z0-9_-]{43}$/);
    const listed = await json(env, ['keys', 'list', '--org', orgId]);
    expect(listed).toEqual([expect.objectContaining({ keyId: key.keyId, name: 'ci', status: 'active' })]);
    expect(JSON.stringify(listed)).not.toContain(key.secret);
    await json(env, ['keys', 'revoke', '--key', key.keyId]);
    expect((await json(env, ['keys', 'list', '--org', orgId]))[0].status).toBe('revoked');

    const user = await json(env, ['users', 'create', '--email', 'Ada@Example.com', '--password-stdin'], 'a long password\n');
    expect(user.email).toBe('ada@example.com');
    const member = await json(env, ['org', 'add-member', '--org', orgId, '--email', 'ada@example.com']);
    expect(member).toMatchObject({ userId: user.userId, role: 'member' });
    await json(env, ['org', 'remove-member', '--org', orgId, '--email', 'ada@example.com']);
    const again = await json(env, ['org', 'add-member', '--org', orgId, '--email', 'ada@example.com', '--manage-keys']);
    expect(again).toMatchObject({ userId: user.userId, role: 'member' });

    const audit = await json(env, ['ledger', 'audit']);
    expect(audit).toMatchObject({ clean: true, differences: [], totals: { granted: '12.5', spent: '0', reserved: '0' } });

    // Nothing secret reached the log: neither the key secret nor the password.
    const store = new SqliteEventStore(join(dir.path, 'events.sqlite'));
    const everything = JSON.stringify(await store.readAll(0, 10_000));
    await store.close();
    expect(everything).not.toContain(key.secret);
    expect(everything).not.toContain('a long password');
  });

  it('grants once per grant id: the grant run again says it was made and grants nothing more', async () => {
    const { orgId } = await json(env, ['org', 'create', '--name', 'Retried']);
    const grant = (amount: string) => [
      'credits',
      'grant',
      '--org',
      orgId,
      '--amount',
      amount,
      '--reason',
      'invoice 7',
      '--grant-id',
      'inv-7',
    ];
    expect(await cli(env, grant('2.5'))).toMatchObject({ code: 0, stdout: `granted 2.5 credits to ${orgId}\n` });
    const again = await cli(env, grant('2.5'));
    expect(again.code).toBe(0);
    expect(again.stdout).toMatch(
      new RegExp(`^grant inv-7 was already made \\(2\\.5 credits to ${orgId}, [^)]+\\): nothing more granted\\n$`),
    );
    expect(await json(env, grant('2.5'))).toEqual({
      orgId,
      grantId: 'inv-7',
      amount: '2.5',
      reason: 'invoice 7',
      alreadyGranted: true,
    });
    const otherAmount = await cli(env, grant('3'));
    expect(otherAmount.code).not.toBe(0);
    expect(otherAmount.stderr).toMatch(/grant inv-7 was already made for 2\.5 credits, not 3 credits/);
    // Without a grant id, each run is a grant of its own.
    const fresh = await json(env, ['credits', 'grant', '--org', orgId, '--amount', '1']);
    expect(fresh).toMatchObject({ grantId: expect.stringMatching(/^[0-9a-f-]{36}$/), alreadyGranted: false });
    expect((await json(env, ['credits', 'grant', '--org', orgId, '--amount', '1'])).grantId).not.toBe(fresh.grantId);
    expect((await json(env, ['credits', 'show', '--org', orgId])).granted).toBe('4.5');
  });

  it("sets a key's rate limits and the organization's default", async () => {
    const { orgId } = await json(env, ['org', 'create', '--name', 'Limited']);
    const key = await json(env, ['keys', 'create', '--org', orgId, '--name', 'agent', '--rpm', '60', '--tpm', '100000']);
    const t = await openTestRuntime({ env });
    try {
      const record = (await t.runtime.projections.keysOf(orgId)).find((k) => k.keyId === key.keyId);
      expect(record?.rateLimits).toEqual({ requestsPerMinute: 60, tokensPerMinute: 100_000 });
    } finally {
      await t.cleanup();
    }
    expect(await json(env, ['org', 'limits', '--org', orgId, '--rpm', '10'])).toEqual({
      orgId,
      rateLimits: { requestsPerMinute: 10 },
    });
    const updated = await json(env, [
      'keys',
      'update',
      '--key',
      key.keyId,
      '--disable',
      '--no-rate-limits',
      '--expires',
      '2099-01-01T00:00:00Z',
    ]);
    expect(updated).toEqual({
      keyId: key.keyId,
      orgId,
      changes: { rateLimits: null, expiresAt: Date.parse('2099-01-01T00:00:00Z'), disabled: true },
    });
    expect((await json(env, ['keys', 'list', '--org', orgId]))[0]).toMatchObject({
      status: 'disabled',
      expiresAt: '2099-01-01T00:00:00.000Z',
      rateLimits: null,
      spent: '0',
      limit: null,
    });
    await json(env, [
      'keys',
      'update',
      '--key',
      key.keyId,
      '--enable',
      '--no-expiry',
      '--name',
      'agent-2',
      '--limit',
      '2.5',
      '--limit-reset',
      'weekly',
    ]);
    expect((await json(env, ['keys', 'list', '--org', orgId]))[0]).toMatchObject({
      status: 'active',
      expiresAt: null,
      name: 'agent-2',
      limit: { credits: '2.5', reset: 'weekly' },
    });
    // As text, what the JSON says: status, spend against the limit, expiry, rate limits, creation, name.
    await json(env, ['keys', 'update', '--key', key.keyId, '--rpm', '5', '--tpm', '900', '--expires', '2099-01-01T00:00:00Z']);
    const listed = await cli(env, ['keys', 'list', '--org', orgId]);
    expect(listed.stdout).toMatch(
      new RegExp(
        `^${key.keyId}  sk-svc-\\S+…  active    spent 0 of 2\\.5 \\(weekly\\)  expires 2099-01-01T00:00:00\\.000Z  5 rpm  900 tpm  created \\S+Z  agent-2$`,
        'm',
      ),
    );
    await json(env, ['keys', 'update', '--key', key.keyId, '--no-expiry', '--no-rate-limits']);
    // The amount alone keeps the period.
    await json(env, ['keys', 'update', '--key', key.keyId, '--limit', '4']);
    expect((await json(env, ['keys', 'list', '--org', orgId]))[0].limit).toEqual({ credits: '4', reset: 'weekly' });
    await json(env, ['keys', 'update', '--key', key.keyId, '--no-limit']);
    expect((await json(env, ['keys', 'list', '--org', orgId]))[0].limit).toBeNull();
    const cleared = await cli(env, ['org', 'limits', '--org', orgId, '--clear']);
    expect(cleared).toMatchObject({ code: 0, stdout: `${orgId}: no default rate limits\n` });
  });

  it('answers bad input with a clear error, a non-zero exit, and writes nothing', async () => {
    const { orgId } = await json(env, ['org', 'create', '--name', 'Careful']);
    const store = new SqliteEventStore(join(dir.path, 'events.sqlite'));
    const head = await store.headPosition();

    const cases: Array<[string[], RegExp, string?]> = [
      [['credits', 'grant', '--org', orgId, '--amount', '-5'], /not an amount of credits/],
      [['credits', 'grant', '--org', orgId, '--amount', '1.0000000001'], /at most 9 decimals/],
      [['credits', 'grant', '--org', orgId, '--amount', '0'], /positive amount/],
      [['credits', 'grant', '--org', '6f1c1f9e-0000-4000-8000-000000000000', '--amount', '1'], /no organization/],
      [['credits', 'grant', '--org', 'not-an-id', '--amount', '1'], /--org must be an id/],
      [['credits', 'grant', '--amount', '1'], /required option '--org <id>'/],
      [['credits', 'grant', '--org', orgId, '--amount', '1', '--grant-id', 'two words'], /--grant-id must be 1 to 128 letters/],
      [['keys', 'revoke', '--key', '6f1c1f9e-0000-4000-8000-000000000000'], /no key/],
      [['org', 'create', '--name', '   '], /name must be 1 to 100 characters/],
      [['org', 'add-member', '--org', orgId, '--email', 'nobody@example.com'], /no user with email/],
      [['org', 'remove-member', '--org', orgId, '--email', 'nobody@example.com'], /no user with email/],
      [['keys', 'create', '--org', orgId, '--name', 'k', '--limit-reset', 'daily'], /--limit-reset goes with --limit/],
      [['keys', 'create', '--org', orgId, '--name', 'k', '--expires', '2030-02-30T00:00:00Z'], /ISO 8601 with its zone/],
      [['users', 'create', '--email', 'short@example.com', '--password-stdin'], /at least 8 characters/, 'short\n'],
      [['users', 'create', '--email', 'not-an-email', '--password-stdin'], /not an email address/, 'long enough pw\n'],
      [['keys', 'create', '--org', orgId, '--name', 'k', '--rpm', '0'], /--rpm must be a whole number from 1 up/],
      [['keys', 'create', '--org', orgId, '--name', 'k', '--tpm', '1.5'], /--tpm must be a whole number from 1 up/],
      [['org', 'limits', '--org', orgId], /give --rpm and\/or --tpm, or --clear/],
      [['keys', 'create', '--org', orgId, '--name', 'k', '--limit', '-1'], /--limit: .*not an amount of credits/],
      [['keys', 'create', '--org', orgId, '--name', 'k', '--limit', '0'], /a key limit must be a positive amount/],
      [['keys', 'create', '--org', orgId, '--name', 'k', '--expires', 'tomorrow'], /--expires must be a time in ISO 8601/],
      [
        ['keys', 'create', '--org', orgId, '--name', 'k', '--expires', '2001-01-01T00:00:00Z'],
        /expiry must be a time in the future/,
      ],
      [['org', 'limits', '--org', orgId, '--rpm', '5', '--clear'], /give --rpm and\/or --tpm, or --clear/],
      [['frobnicate'], /unknown command/],
      [
        ['ledger', 'export', '--org', orgId, '--from', '2026-11-02T00:00:00Z', '--to', '2026-11-01T00:00:00Z'],
        /--from 2026-11-02T00:00:00.000Z is later than --to 2026-11-01T00:00:00.000Z/,
      ],
      [
        ['ledger', 'export', '--org', orgId, '--output', join(dir.path, 'no-such-dir', 'x.ndjson')],
        /^model-gateway: cannot write .*no-such-dir\/x\.ndjson: ENOENT/,
      ],
      [['ledger', 'audit', '--org', '6f1c1f9e-0000-4000-8000-000000000000'], /^model-gateway: no organization 6f1c1f9e-/],
      [['statements', 'show', '--org', orgId, '--month', '2999-01'], /2999-01 has not begun/],
    ];
    for (const [args, message, stdin] of cases) {
      const run = await cli(env, args, stdin);
      expect(run.code).not.toBe(0);
      expect(run.stderr).toMatch(message);
      expect(run.stdout).toBe('');
    }
    expect(await store.headPosition()).toBe(head);

    const asJson = await cli(env, ['--json', 'credits', 'grant', '--org', orgId, '--amount', 'lots']);
    expect(asJson.code).toBe(1);
    expect(JSON.parse(asJson.stderr)).toEqual({ error: expect.stringContaining('not an amount of credits') });
    await store.close();
  });

  it('fails the audit, with exit 1, when a charge does not match its tokens and prices', async () => {
    const tampered = tempDir('cli-tampered');
    const tEnv = { DATA_DIR: tampered.path, REDIS_URL: '' };
    try {
      const { orgId } = await json(tEnv, ['org', 'create', '--name', 'Tampered']);
      await json(tEnv, ['credits', 'grant', '--org', orgId, '--amount', '1']);
      const store = new SqliteEventStore(join(tampered.path, 'events.sqlite'));
      const facts = { requestId: 'q', keyId: 'k', surface: 's', model: 'm', reservationId: 'r', orgId };
      await store.append(
        'reservation-r',
        [{ type: 'CreditsReserved', data: { ...facts, amount: 1000, reservedAt: 1, expiresAt: 2 } }],
        'no_stream',
      );
      await store.append(
        'reservation-r',
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
              amount: 999,
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
      const run = await cli(tEnv, ['ledger', 'audit']);
      expect(run.code).toBe(1);
      expect(run.stdout).toMatch(/DIFFERENCE event \d+ \(ReservationSettled\): charge 999 but tokens × prices give 20/);
    } finally {
      tampered.cleanup();
    }
  });

  it('is safe to run beside a running instance: its grants show up there within a second', async () => {
    const t = await openTestRuntime({ env: { LOG_POLL_MS: '50' } });
    try {
      const { orgId } = await t.runtime.identity.createOrganization('Shared');
      const run = await cli(t.env, ['credits', 'grant', '--org', orgId, '--amount', '3']);
      expect(run.code).toBe(0);
      const start = Date.now();
      await t.runtime.projector.catchUp(1000);
      expect(Date.now() - start).toBeLessThan(1000);
      expect((await t.runtime.projections.balance(orgId)).granted).toBe(3_000_000_000);
    } finally {
      await t.cleanup();
    }
  });
});

describeWithRedis('operator tool with Redis', () => {
  it('rebuilds the read models with progress lines and the same balances', async () => {
    const dir = tempDir('cli-redis');
    const env = { DATA_DIR: dir.path, REDIS_URL: testRedisUrl()!, REDIS_PREFIX: uniquePrefix('cli') };
    try {
      const { orgId } = await json(env, ['org', 'create', '--name', 'Rebuilt']);
      await json(env, ['credits', 'grant', '--org', orgId, '--amount', '4.25']);
      const before = await json(env, ['credits', 'show', '--org', orgId]);
      const run = await cli(env, ['projections', 'rebuild']);
      expect(run.code).toBe(0);
      expect(run.stderr).toMatch(/progress: 2\/2 \(100%\)/);
      expect(run.stdout).toMatch(/rebuilt redis read models from 2 events/);
      expect(await json(env, ['credits', 'show', '--org', orgId])).toEqual(before);
      expect((await json(env, ['ledger', 'audit', '--org', orgId])).clean).toBe(true);
    } finally {
      dir.cleanup();
    }
  });
});
