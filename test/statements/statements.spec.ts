import request from 'supertest';
import { orgChainHead } from '../../src/ledger/ledger-chain';
import { monthOf } from '../../src/statements/statement';
import { auditThenClose, startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { operatorTool } from '../support/operator-tool';

/** A statement printed by the operator tool, beside a gateway that served real requests. */
describe('statements from the operator tool', () => {
  let g: TestGateway;
  let months: string[];

  beforeAll(async () => {
    g = await startGateway({ credits: 5_000_000_000 });
    const started = Date.now();
    for (const [model, path] of [
      [TEST_MODELS.gpt.slug, '/api/v1/chat/completions'],
      [TEST_MODELS.claude.slug, '/api/v1/chat/completions'],
      [TEST_MODELS.gpt.slug, '/api/v1/chat/completions'],
    ]) {
      const res = await request(g.baseUrl)
        .post(path)
        .set('Authorization', `Bearer ${g.key}`)
        .send({ model, messages: [{ role: 'user', content: 'Hello there' }], max_tokens: 20 });
      expect(res.status).toBe(200);
    }
    await g.settled();
    // The traffic may straddle a month's end: every month it touched is folded.
    months = [...new Set([monthOf(started), monthOf(Date.now())])];
  });
  afterAll(() => auditThenClose(g));

  const statement = async (month: string, format = 'json') => {
    const run = await operatorTool(g.t.env, ['statements', 'show', '--org', g.orgId, '--month', month, '--format', format]);
    expect(run).toMatchObject({ code: 0, stderr: '' });
    return run.stdout;
  };

  it("closes at the read models' balance, its charges their spend, to the nano-credit", async () => {
    const balance = await g.t.runtime.projections.balance(g.orgId);
    const statements = await Promise.all(months.map(async (m) => JSON.parse(await statement(m))));
    const last = statements[statements.length - 1];
    expect(last.closingBalance).toBe(balance.granted - balance.spent);
    expect(statements.reduce((sum, s) => sum + s.charges.amount, 0)).toBe(balance.spent);
    expect(statements.reduce((sum, s) => sum + s.charges.requests, 0)).toBe(3);
    expect(statements[0].openingBalance + statements[0].grants.amount).toBe(5_000_000_000);
    const models = statements.flatMap((s) => s.charges.byModel.map((m: { model: string }) => m.model));
    expect(new Set(models)).toEqual(new Set([TEST_MODELS.gpt.slug, TEST_MODELS.claude.slug]));
    // The chain head the statement names is the one the log holds (nothing recorded since).
    const chain = await orgChainHead(g.t.runtime.events, g.orgId);
    expect(last.chain).toEqual({ head: chain.head, events: chain.events, position: chain.position });
    expect(chain.events).toBeGreaterThanOrEqual(7); // a grant, three reservations and their settlements
  });

  it('prints CSV and a printable page with the same closing balance', async () => {
    const month = months[months.length - 1];
    const json = JSON.parse(await statement(month));
    const closing = (json.closingBalance / 1e9).toFixed(9).replace(/\.?0+$/, '');
    const csv = await statement(month, 'csv');
    expect(csv.split('\r\n')[0]).toBe('organization,month,section,item,quantity,credits');
    expect(csv).toContain(`${g.orgId},${month},closing_balance,,,${closing}\r\n`);
    const html = await statement(month, 'html');
    expect(html).toMatch(/^<!doctype html>/);
    expect(html).toContain(`<td class="n">${closing}</td>`);
    const text = await statement(month, 'text');
    expect(text).toMatch(new RegExp(`Closing balance\\s+${closing.replace('.', '\\.')}\\n`));
  });

  it('refuses a month that is not one, and an organization that does not exist', async () => {
    const bad = await operatorTool(g.t.env, ['statements', 'show', '--org', g.orgId, '--month', '2026-13']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('"2026-13" is not a month: use YYYY-MM');
    const future = await operatorTool(g.t.env, ['statements', 'show', '--org', g.orgId, '--month', '2999-01']);
    expect(future.code).toBe(2);
    expect(future.stderr).toContain('2999-01 has not begun');
    const nobody = await operatorTool(g.t.env, [
      'statements',
      'show',
      '--org',
      '00000000-0000-4000-8000-000000000000',
      '--month',
      '2026-11',
    ]);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toContain('no organization 00000000-0000-4000-8000-000000000000');
  });
});
