import { person } from '../support/dashboard';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { creditsStream } from '../../src/ledger/ledger.events';

/**
 * The usage export in the FinOps FOCUS columns, from the management API and the dashboard: its
 * columns, its rows, and its totals equal to the ledger's to the nano-credit, credit notes included.
 */

const M = TEST_MODELS;

/** FOCUS 1.2's mandatory columns, as the specification lists them. */
const FOCUS_MANDATORY = [
  'BilledCost',
  'BillingAccountId',
  'BillingAccountName',
  'BillingCurrency',
  'BillingPeriodEnd',
  'BillingPeriodStart',
  'ChargeCategory',
  'ChargeClass',
  'ChargeDescription',
  'ChargePeriodEnd',
  'ChargePeriodStart',
  'ContractedCost',
  'EffectiveCost',
  'InvoiceIssuerName',
  'ListCost',
  'PricingQuantity',
  'PricingUnit',
  'ProviderName',
  'PublisherName',
  'ServiceCategory',
  'ServiceName',
];

/** RFC 4180, read: fields in double quotes may hold commas, line breaks and doubled quotes. */
function parseCsv(text: string): Record<string, string>[] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (c === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i++;
    } else field += c;
  }
  expect(field).toBe(''); // every record ends with CRLF
  const [header, ...rows] = records;
  for (const row of rows) expect(row).toHaveLength(header.length);
  return rows.map((row) => Object.fromEntries(header.map((name, i) => [name, row[i]])));
}
const headerOf = (text: string) => text.slice(0, text.indexOf('\r\n')).split(',');

/** A decimal of credits, exactly, as nano-credits (BigInt: no float on the way). */
function nanoOf(decimal: string): bigint {
  const match = /^(-?)(\d+)(?:\.(\d{1,9}))?$/.exec(decimal);
  if (!match) throw new Error(`not a decimal of credits: ${decimal}`);
  const nano = BigInt(match[2]) * 1_000_000_000n + BigInt((match[3] ?? '').padEnd(9, '0'));
  return match[1] === '-' ? -nano : nano;
}
const sum = (rows: Record<string, string>[], column: string) => rows.reduce((n, r) => n + nanoOf(r[column]), 0n);

let g: TestGateway;
let management: string;
let second: { secret: string; keyId: string };
/** The read models' spend before the credit notes were written (whatever the credit notes' own folds do with them). */
let spentBeforeNotes: number;

const chat = (key: string, model: string, text: string) =>
  fetch(`${g.baseUrl}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model, messages: [{ role: 'user', content: text }] }),
  }).then((res) => res.text());

/** The ledger's own figures for the organization, read from the log: settled charges (recomputed amounts), and credit notes. */
async function ledgerTotals(orgId: string) {
  let charged = 0n;
  let credited = 0n;
  let settlements = 0;
  for (const e of await g.t.runtime.events.readAll(0, 1_000_000)) {
    const data = e.data as { orgId: string; amount: number };
    if (data.orgId !== orgId) continue;
    if (e.type === 'ReservationSettled') {
      charged += BigInt(data.amount);
      settlements += 1;
    }
    if (e.type === 'CreditNoteIssued') credited += BigInt(data.amount);
  }
  return { charged, credited, settlements };
}

const exportCsv = (query = '', key = management) =>
  fetch(`${g.baseUrl}/api/v1/usage/focus${query}`, { headers: { authorization: `Bearer ${key}` } });

beforeAll(async () => {
  g = await startGateway();
  management = (await createKey(g.t.runtime, g.orgId, 'finance', { kind: 'management' })).secret;
  second = await createKey(g.t.runtime, g.orgId, 'batch, "nightly"');
  // Usage reported by the host, so charges differ by request: a cache read, odd counts.
  g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hi.', usage: { input: 1_234, output: 567, cacheRead: 89 } } });
  g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Hi.', usage: { input: 7, output: 3 } } });
  for (let i = 0; i < 4; i++) await chat(g.key, M.gpt.slug, `one ${i}`);
  for (let i = 0; i < 3; i++) await chat(second.secret, M.claude.slug, `two ${i}`);
  await chat(second.secret, M.gpt.slug, 'three');
  await g.settled();
  spentBeforeNotes = (await g.t.runtime.projections.balance(g.orgId)).spent;
  // Credit notes, as the credit-note contract writes them, straight into the log: a refund of one
  // request, and an adjustment each way.
  const [settled] = (await g.t.runtime.events.readAll(0, 1_000_000)).filter((e) => e.type === 'ReservationSettled');
  const refunded = settled.data as { reservationId: string; keyId: string; amount: number };
  const note = (creditNoteId: string, kind: string, amount: number, reservation: typeof refunded | null) => ({
    type: 'CreditNoteIssued',
    data: {
      orgId: g.orgId,
      creditNoteId,
      idempotencyKey: creditNoteId,
      kind,
      reservationId: reservation?.reservationId ?? null,
      keyId: reservation?.keyId ?? null,
      amount,
      reason: kind === 'refund' ? 'dispute' : 'correction',
      issuedBy: 'cli',
      issuedAt: Date.now(),
    },
  });
  await g.t.runtime.events.append(
    creditsStream(g.orgId),
    [
      note('cn-1', 'refund', Math.floor(refunded.amount / 3), refunded),
      note('cn-2', 'adjustment', 5_000_000, null),
      note('cn-3', 'adjustment', -1_234_567, null),
    ],
    'any',
  );
  await g.t.runtime.projector.catchUp();
});
afterAll(() => g.close());

describe('management API: GET /api/v1/usage/focus', () => {
  it('a row per request in the FOCUS columns, totals equal to the ledger to the nano-credit', async () => {
    const res = await exportCsv();
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="usage-focus-.+\.csv"$/);
    expect(Number(res.headers.get('x-ledger-position'))).toBe(await g.t.runtime.events.headPosition());
    const text = await res.text();
    const header = headerOf(text);
    for (const column of FOCUS_MANDATORY) expect(header).toContain(column);
    for (const column of header.filter((c) => !FOCUS_MANDATORY.includes(c))) {
      // Beyond the mandatory set: FOCUS's own conditional columns, or ours x_-prefixed.
      expect(column).toMatch(
        /^(x_[A-Za-z0-9]+|ChargeFrequency|ConsumedQuantity|ConsumedUnit|ServiceProviderName|HostProviderName)$/,
      );
    }
    const rows = parseCsv(text);
    const ledger = await ledgerTotals(g.orgId);
    const usage = rows.filter((r) => r.ChargeCategory === 'Usage');
    expect(usage).toHaveLength(ledger.settlements);
    expect(sum(usage, 'BilledCost')).toBe(ledger.charged);
    // Every cost column agrees (list price, nothing discounted), and the exact integer column too.
    for (const column of ['EffectiveCost', 'ListCost', 'ContractedCost']) expect(sum(rows, column)).toBe(sum(rows, 'BilledCost'));
    expect(rows.reduce((n, r) => n + BigInt(r.x_BilledCostNano), 0n)).toBe(sum(rows, 'BilledCost'));
    // Credit notes: money back is a negative cost; the whole equals what the balance paid.
    const credits = rows.filter((r) => r.ChargeCategory === 'Credit');
    const adjustments = rows.filter((r) => r.ChargeCategory === 'Adjustment');
    expect(credits).toHaveLength(1);
    expect(adjustments).toHaveLength(2);
    expect(sum(rows, 'BilledCost')).toBe(ledger.charged - ledger.credited);
    expect(sum(usage, 'BilledCost')).toBe(BigInt(spentBeforeNotes));
    // A refund names its request's model and key; its description and reason say what it is.
    const refund = credits[0];
    expect(refund).toMatchObject({
      x_CreditNoteId: 'cn-1',
      x_CreditNoteReason: 'dispute',
      x_Model: M.gpt.slug,
      x_KeyId: g.keyId,
    });
    expect(refund.ConsumedQuantity).toBe('');
    // A usage row: the organization, the request, its tokens, its periods.
    const row = usage.find((r) => r.x_KeyId === second.keyId && r.x_Model === M.claude.slug)!;
    expect(row).toMatchObject({
      BillingAccountId: g.orgId,
      BillingCurrency: 'USD',
      ChargeClass: '',
      ServiceCategory: 'AI and Machine Learning',
      PricingUnit: 'Requests',
      PricingQuantity: '1',
      ConsumedUnit: 'Tokens',
      ConsumedQuantity: '10',
      x_InputTokens: '7',
      x_OutputTokens: '3',
      x_KeyName: 'batch, "nightly"',
      PublisherName: 'fake-anthropic',
    });
    // 7 × $3/M + 3 × $15/M = $0.000066
    expect(row.BilledCost).toBe('0.000066');
    expect(row.BillingPeriodStart).toMatch(/^\d{4}-\d{2}-01T00:00:00Z$/);
    expect(Date.parse(row.ChargePeriodEnd)).toBeGreaterThan(Date.parse(row.ChargePeriodStart));
  });

  it('a row per day × model × key sums to the same totals', async () => {
    const perRequest = parseCsv(await (await exportCsv()).text());
    const res = await exportCsv('?group=day');
    expect(res.status).toBe(200);
    const rows = parseCsv(await res.text());
    const usage = rows.filter((r) => r.ChargeCategory === 'Usage');
    // Today: gpt on the first key, claude and gpt on the second.
    expect(usage).toHaveLength(3);
    expect(usage.map((r) => Number(r.PricingQuantity)).reduce((a, b) => a + b)).toBe((await ledgerTotals(g.orgId)).settlements);
    expect(sum(rows, 'BilledCost')).toBe(sum(perRequest, 'BilledCost'));
    expect(sum(usage, 'BilledCost')).toBe((await ledgerTotals(g.orgId)).charged);
    const day = usage[0];
    expect(Date.parse(day.ChargePeriodEnd) - Date.parse(day.ChargePeriodStart)).toBe(86_400_000);
    expect(day.x_RequestId).toBe('');
  });

  it('keeps to the days asked', async () => {
    const rows = parseCsv(await (await exportCsv('?from=2001-01-01&to=2001-12-31')).text());
    expect(rows).toEqual([]);
  });

  it('refuses bad queries (400), an ordinary key (403) and no key (401), in the management format', async () => {
    for (const query of ['?group=month', '?from=2026-13-01', '?from=2026-02-02&to=2026-02-01', '?to=yesterday']) {
      const res = await exportCsv(query);
      expect(res.status).toBe(400);
      expect(await res.json()).toMatchObject({ error: { type: 'invalid_request_error', code: 'invalid_request' } });
    }
    const ordinary = await exportCsv('', g.key);
    expect(ordinary.status).toBe(403);
    expect(await ordinary.json()).toMatchObject({ error: { code: 'forbidden' } });
    expect((await fetch(`${g.baseUrl}/api/v1/usage/focus`)).status).toBe(401);
  });
});

describe('dashboard: GET /dashboard/api/usage/focus', () => {
  it('a download for owners; members who may not see billing are refused', async () => {
    const owner = await person(g, 'owner@example.com');
    const member = await person(g, 'member@example.com');
    const stranger = await person(g, 'stranger@example.com');
    const org = await owner.post('/organizations', { name: 'Finance, Inc.' }).expect(201);
    const orgId: string = org.body.id;
    await owner.post('/members', { email: 'member@example.com' }).expect(201);
    await member.post('/organizations/active', { orgId }).expect(200);
    await g.t.runtime.ledger.grant(orgId, 10_000_000_000, 'test');
    const { secret } = await createKey(g.t.runtime, orgId, 'app');
    await chat(secret, M.gpt.slug, 'a');
    await chat(secret, M.claude.slug, 'b');
    await g.settled();

    const download = await owner.get('/usage/focus?group=request').expect(200);
    expect(download.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(download.headers['content-disposition']).toBe(`attachment; filename="usage-focus-${orgId}.csv"`);
    const rows = parseCsv(download.text);
    expect(rows.map((r) => r.x_Model).sort()).toEqual([M.claude.slug, M.gpt.slug]);
    expect(rows.every((r) => r.BillingAccountId === orgId && r.BillingAccountName === 'Finance, Inc.')).toBe(true);
    expect(sum(rows, 'BilledCost')).toBe((await ledgerTotals(orgId)).charged);
    await owner.get('/usage/focus?group=week').expect(400);

    const refused = await member.get('/usage/focus').expect(403);
    expect(refused.body.error.message).toMatch(/owners/);
    await stranger.get('/usage/focus').expect(404); // no active organization of theirs
    await fetch(`${g.baseUrl}/dashboard/api/usage/focus`).then((res) => expect(res.status).toBe(401));
  });
});
