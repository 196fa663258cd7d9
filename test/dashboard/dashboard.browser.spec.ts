import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import type { Browser, Page } from 'playwright-core';
import { issueCreditNote } from '../../src/credit-notes/credit-notes';
import { describeWithBrowser, launchChromium } from '../support/browser';
import { startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS, TestGateway } from '../support/gateway';
import { eventually, ROOT } from '../support/processes';

const M = TEST_MODELS;
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS === '1' ? join(ROOT, 'docs', 'screenshots') : null;

describeWithBrowser('dashboard in a real browser', () => {
  let g: TestGateway;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    g = await startGateway({ credits: 0 });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 860 } });
    page.on('pageerror', (error) => {
      throw error;
    });
  });
  afterAll(async () => {
    await browser?.close();
    expect((await g.audit()).differences).toEqual([]);
    await g.close();
  });

  const byTest = (id: string) => page.getByTestId(id);
  const snap = async (name: string) => {
    if (!SCREENSHOTS) return;
    // Secrets are masked even though these are throwaway test keys: pictures get shared.
    const mask = [byTest('key-secret'), byTest('key-curl')];
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-desktop.png`), fullPage: true, mask });
    await page.setViewportSize({ width: 375, height: 780 });
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-phone.png`), fullPage: true, mask });
    await page.setViewportSize({ width: 1280, height: 860 });
  };

  it('signs up, creates an organization and a key, sees the key used, revokes it', async () => {
    await page.goto(`${g.baseUrl}/dashboard/`);
    await byTest('signin-email').waitFor();
    await snap('signin');
    await byTest('signup-toggle').click();
    await byTest('signin-email').fill('grace@example.com');
    await byTest('signin-password').fill('a long enough password');
    await byTest('signin-submit').click();

    // No organization yet: the app asks for one.
    await byTest('org-name').fill('Grace Labs');
    await byTest('org-create').click();
    await byTest('credits-available').waitFor();
    const session = (await page.evaluate(async () => (await fetch('/dashboard/api/session')).json())) as {
      activeOrg: { id: string };
    };
    const orgId: string = session.activeOrg.id;
    await g.t.runtime.ledger.grant(orgId, 2_000_000_000, 'browser test');
    await g.t.runtime.projector.catchUp();
    await snap('organizations');

    await byTest('nav-keys').click();
    await byTest('key-name').fill('ci');
    await byTest('key-create').click();
    const secret = (await byTest('key-secret').textContent())!.trim();
    expect(secret).toMatch(/^sk-svc-/);
    expect(await byTest('base-url-chat').textContent()).toContain(`${g.baseUrl}/api/v1`);
    await snap('key-created');
    await byTest('key-secret-close').click();
    expect(await page.content()).not.toContain(secret);

    // The key works with the official client…
    g.fake.on(M.gpt.hostModel, {
      kind: 'reply',
      reply: { text: 'Hello from the browser test', usage: { input: 300, output: 40 } },
    });
    const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: secret, maxRetries: 0 });
    await client.chat.completions.create({ model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }] });
    await g.settled();

    // …and the request shows in usage with its cost (300 × $1/M + 40 × $2/M = 0.00038).
    await byTest('nav-usage').click();
    await byTest('usage-table').waitFor();
    await eventually(async () => ((await byTest('usage-table').textContent()) ?? '').includes(M.gpt.slug), 15_000);
    const row = (await byTest('usage-table').textContent())!;
    expect(row).toContain('ci');
    expect(row).toContain('0.00038');
    await byTest('usage-chart').waitFor();
    await snap('usage');

    // The owner downloads it in the FinOps FOCUS columns: the request's row, with its cost.
    const [download] = await Promise.all([page.waitForEvent('download'), byTest('usage-export-request').click()]);
    const csv = readFileSync(await download.path(), 'utf8');
    expect(csv.slice(0, csv.indexOf('\r\n'))).toMatch(/^BilledCost,BillingAccountId,/);
    expect(csv.split('\r\n').filter((line) => line.startsWith('0.00038,'))).toHaveLength(1);

    // The owner issues no credit note (the page says who does); the operator's refund shows on its row.
    expect(await byTest('credit-note-form').count()).toBe(0);
    expect(await byTest('credit-notes-by-operator').textContent()).toContain('issued by the gateway’s operator');
    const requestId = (await page.locator('tr[data-request-id]').first().getAttribute('data-request-id'))!;
    const ask = { orgId, kind: 'refund' as const, generation: requestId, amount: '0.0001', reason: 'goodwill' };
    await issueCreditNote(g.t.runtime.ledger, g.t.runtime.projections, { ...ask, idempotencyKey: 'op-1', issuedBy: 'cli' });
    await g.t.runtime.projector.catchUp();
    await byTest('nav-keys').click();
    await byTest('nav-usage').click();
    await byTest('usage-refunded').waitFor();
    expect(await byTest('usage-refunded').textContent()).toContain('0.0001');

    // Revoke, confirm: the API refuses the key.
    await byTest('nav-keys').click();
    const keys = (await page.evaluate(async () => (await fetch('/dashboard/api/keys')).json())) as {
      data: Array<{ id: string }>;
    };
    await byTest(`key-revoke-${keys.data[0].id}`).click();
    await byTest('key-revoke-confirm').click();
    await eventually(async () => ((await byTest('keys-table').textContent()) ?? '').toLowerCase().includes('revoked'), 15_000);
    await snap('keys');
    const refused = await client.chat.completions
      .create({ model: M.gpt.slug, messages: [{ role: 'user', content: 'hi' }] })
      .catch((e) => e);
    expect(refused.status).toBe(401);
  });

  /** Creates a key on the keys page: its secret, as shown once, and its id. */
  const createKey = async (name: string) => {
    await byTest('nav-keys').click();
    await byTest('key-name').fill(name);
    await byTest('key-create').click();
    const secret = (await byTest('key-secret').textContent())!.trim();
    await byTest('key-secret-close').click();
    const keys = (await page.evaluate(async () => (await fetch('/dashboard/api/keys')).json())) as {
      data: Array<{ id: string; name: string }>;
    };
    return { secret, id: keys.data.find((k) => k.name === name)!.id };
  };

  it("sets a key's credit limit, which the openai client then meets as a 402; raised, the key serves again", async () => {
    const { secret, id } = await createKey('capped');

    // A limit that covers one request (max_tokens 10 holds about 0.00002; it is charged 0.000015), not two.
    await byTest(`key-limit-${id}`).click();
    await byTest('key-limit-amount').fill('0.00003');
    await byTest('key-limit-reset').selectOption('monthly');
    await byTest('key-limit-save').click();
    await eventually(
      async () => ((await byTest(`key-limit-text-${id}`).textContent()) ?? '').includes('of 0.00003 a month'),
      5_000,
    );

    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Capped.', usage: { input: 5, output: 5 } } });
    const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: secret, maxRetries: 0 });
    const ask = () =>
      client.chat.completions.create({ model: M.gpt.slug, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    await ask();
    const refused = await ask().catch((e) => e);
    expect(refused.status).toBe(402);
    expect(refused.message).toMatch(/key limit reached: this key's monthly limit is 0.00003 credits/);

    // The page shows what the limit counts now; raised, the key serves again.
    await page.reload();
    await eventually(
      async () => ((await byTest(`key-limit-text-${id}`).textContent()) ?? '').includes('0.000015 of 0.00003'),
      5_000,
    );
    await byTest(`key-limit-${id}`).click();
    await byTest('key-limit-amount').fill('1');
    await byTest('key-limit-save').click();
    await eventually(async () => ((await byTest(`key-limit-text-${id}`).textContent()) ?? '').includes('of 1 a month'), 15_000);
    const served = await ask();
    expect(served.choices[0].message.content).toBe('Capped.');
    await g.settled();
  });

  it('gives a key rate limits and an expiry, makes a management key, and adds a member who may manage keys', async () => {
    const { secret, id } = await createKey('throttled');

    await byTest(`key-rate-${id}`).click();
    await byTest('key-rate-rpm').fill('1');
    await byTest('key-rate-save').click();
    await eventually(
      async () => ((await byTest(`key-rate-text-${id}`).textContent()) ?? '').includes('1 requests a minute'),
      5_000,
    );
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Once.', usage: { input: 5, output: 5 } } });
    const client = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: secret, maxRetries: 0 });
    const ask = () =>
      client.chat.completions.create({ model: M.gpt.slug, max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
    await ask();
    const limited = await ask().catch((e) => e);
    expect(limited.status).toBe(429);

    await byTest(`key-expiry-${id}`).click();
    await byTest('key-expiry-at').fill('2099-06-30T12:00');
    await byTest('key-expiry-save').click();
    // The saved expiry shown (while the editor is open, the cell holds the form: no 'Never' either).
    await eventually(async () => ((await byTest(`key-expiry-text-${id}`).textContent()) ?? '').includes('2099'), 15_000);
    const shown = (await page.evaluate(async () => (await fetch('/dashboard/api/keys')).json())) as {
      data: Array<{ id: string; expiresAt: string | null }>;
    };
    expect(shown.data.find((k) => k.id === id)!.expiresAt).toMatch(/^2099-06-30T/);

    // An owner makes a management key; the page offers no billing rights (the operator gives them).
    await byTest('key-name').fill('platform');
    expect(await byTest('key-billing').count()).toBe(0);
    await byTest('key-management').check();
    await byTest('key-create').click();
    const manager = (await byTest('key-secret').textContent())!.trim();
    await byTest('key-secret-close').click();
    const listed = (await page.evaluate(async () => (await fetch('/dashboard/api/keys')).json())) as {
      data: Array<{ name: string; kind: string; billing: boolean }>;
    };
    expect(listed.data.find((k) => k.name === 'platform')).toMatchObject({ kind: 'management', billing: false });
    expect(await byTest('keys-table').textContent()).not.toContain('Billing');
    const managed = await fetch(`${g.baseUrl}/api/v1/keys`, { headers: { authorization: `Bearer ${manager}` } });
    expect(managed.status).toBe(200);
    await managed.text();

    // A colleague who signed up is added as a member who may manage keys.
    await g.t.runtime.identity.registerUser('lin@example.com', 'a long enough password');
    await byTest('nav-members').click();
    await byTest('member-email').fill('lin@example.com');
    await byTest('member-manage-keys').check();
    await byTest('member-add').click();
    await eventually(async () => ((await byTest('members-table').textContent()) ?? '').includes('lin@example.com'), 15_000);
    const members = (await page.evaluate(async () => (await fetch('/dashboard/api/members')).json())) as {
      data: Array<{ email: string; manageKeys: boolean }>;
    };
    expect(members.data.find((m) => m.email === 'lin@example.com')).toMatchObject({ manageKeys: true });
    await snap('members');
    await g.settled();

    // The owner's statement of the month: the page links the server's statement in each format.
    await byTest('nav-billing').click();
    const month = await byTest('billing-month').inputValue();
    expect(month).toBe(new Date().toISOString().slice(0, 7));
    const csvHref = await byTest('billing-csv').getAttribute('href');
    expect(csvHref).toBe(`/dashboard/api/statements?month=${month}&format=csv`);
    const csv = await page.evaluate(async (href) => (await fetch(href)).text(), csvHref!);
    expect(csv).toMatch(/,closing_balance,,,/);
    // The ledger card shows the organization's chain head and links its export.
    await eventually(async () => /^[0-9a-f]{64}$/.test((await byTest('ledger-chain-head').textContent()) ?? ''), 15_000);
    expect(await byTest('ledger-export').getAttribute('href')).toBe('/dashboard/api/ledger/export');
    await snap('billing');
  });

  it('streams a playground reply token by token, and the stop button aborts it', async () => {
    const words = Array.from({ length: 40 }, (_, i) => `tok${i}`).join(' ');
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: words, usage: { input: 20, output: 40 } }, chunkDelayMs: 25 });
    await byTest('nav-playground').click();
    await byTest('playground-model').selectOption(M.gpt.slug);
    // Chat models only: an embedding model has nothing to converse with.
    const offered = await byTest('playground-model')
      .locator('option')
      .evaluateAll((options) => options.map((o) => o.getAttribute('value')));
    expect(offered).toContain(M.gpt.slug);
    expect(offered).not.toContain(TEST_EMBEDDING_MODELS.embed.slug);
    await byTest('playground-system').fill('Be brief.');
    await byTest('playground-input').fill('Count for me');
    await byTest('playground-send').click();

    // Token by token: the reply is seen growing through several lengths before it is complete.
    const lengths = new Set<number>();
    await eventually(
      async () => {
        const text = (await byTest('playground-reply').textContent()) ?? '';
        lengths.add(text.length);
        return text.includes('tok39');
      },
      10_000,
      10,
    );
    expect(lengths.size).toBeGreaterThan(5);
    await eventually(async () => /40/.test((await byTest('playground-meta').textContent()) ?? ''), 15_000);
    expect(await byTest('playground-meta').textContent()).toMatch(/0\.0001/);
    await snap('playground');

    // Stop: a long, slow reply, stopped half way. The test model reasons, so its host call is read
    // to its end for the host's count (billing.spec.ts); the reply shown stops all the same.
    g.fake.on(M.gpt.hostModel, {
      kind: 'reply',
      reply: { text: Array.from({ length: 500 }, (_, i) => `w${i}`).join(' '), usage: null },
      chunkDelayMs: 10,
    });
    const index = g.fake.requests.length;
    await byTest('playground-input').fill('A very long answer please');
    await byTest('playground-send').click();
    await eventually(async () => ((await byTest('playground-reply').textContent()) ?? '').includes('w5'), 15_000, 10);
    await byTest('playground-stop').click();
    await expect(g.fake.closed(index)).rejects.toThrow();
    const stoppedAt = (await byTest('playground-reply').textContent()) ?? '';
    expect(stoppedAt).not.toContain('w499');
    await g.settled();
    const usage = (await page.evaluate(async () => (await fetch('/dashboard/api/usage')).json())) as { data: unknown[] };
    expect(usage.data[0]).toMatchObject({ surface: 'playground', status: 'client_abort' });
  });
});
