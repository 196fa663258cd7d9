import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { monthOf } from '../../src/statements/statement';
import { person } from '../support/dashboard';
import { ROOT } from '../support/processes';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { chatCompletion } from '../support/streams';

/** The active organization's monthly statement in the dashboard: owners only, in JSON, CSV and a printable page. */
let g: TestGateway;
beforeAll(async () => {
  g = await startGateway({ credits: 0 });
});
afterAll(async () => {
  expect((await g.audit()).differences).toEqual([]);
  await g.close();
});

it("shows owners the month's statement, refuses members and the rest", async () => {
  const owner = await person(g, 'owner@example.com');
  const dev = await person(g, 'dev@example.com');
  const other = await person(g, 'other@example.com');
  const org = await owner.post('/organizations', { name: 'Books' }).expect(201);
  const orgId: string = org.body.id;
  await g.t.runtime.ledger.grant(orgId, 2_000_000_000, 'invoice 1');
  await owner.post('/members', { email: 'dev@example.com' }).expect(201);
  await dev.post('/organizations/active', { orgId }).expect(200);
  const key = await owner.post('/keys', { name: 'prod' }).expect(201);
  await g.t.runtime.projector.catchUp();
  const started = Date.now();
  const res = await chatCompletion(g.baseUrl, key.body.secret, {
    model: TEST_MODELS.gpt.slug,
    messages: [{ role: 'user', content: 'Hello' }],
  });
  expect(res.status).toBe(200);
  await res.text();
  await g.settled();
  const month = monthOf(started);
  expect(monthOf(Date.now())).toBe(month); // run a second after midnight on a month's first day, it would be two statements

  expect((await owner.get('/session').expect(200)).body.activeOrg).toMatchObject({ role: 'owner', billing: true });
  const json = await owner.get(`/statements?month=${month}`).expect(200);
  // The log's position it was read to is beside the statement, not in it: the document is the chain's alone.
  expect(json.headers['x-ledger-position']).toMatch(/^\d+$/);
  expect(json.body).not.toHaveProperty('position');
  const balance = await g.t.runtime.projections.balance(orgId);
  expect(json.body).toMatchObject({
    orgId,
    month,
    openingBalance: 0,
    grants: { count: 1, amount: 2_000_000_000 },
    charges: { requests: 1, amount: balance.spent, byModel: [{ model: TEST_MODELS.gpt.slug, requests: 1 }] },
    closingBalance: 2_000_000_000 - balance.spent,
  });
  expect(balance.spent).toBeGreaterThan(0);

  const csv = await owner.get(`/statements?month=${month}&format=csv`).expect(200);
  expect(csv.headers['content-type']).toBe('text/csv; charset=utf-8');
  expect(csv.headers['content-disposition']).toBe(`attachment; filename="statement-${orgId}-${month}.csv"`);
  expect(csv.text).toContain(`${orgId},${month},grant,`);
  const html = await owner.get(`/statements?month=${month}&format=html`).expect(200);
  expect(html.headers['content-type']).toBe('text/html; charset=utf-8');
  expect(html.text).toContain('<h1>Credit statement</h1>');
  // The dashboard's icon, inline as its index.html has it: the printable page asks for no /favicon.ico.
  const icon = /<link\s+rel="icon"\s+type="image\/svg\+xml"\s+href="(data:[^"]+)"/;
  const dashboardIcon = icon.exec(readFileSync(join(ROOT, 'src', 'dashboard', 'web', 'index.html'), 'utf8'))?.[1];
  expect(dashboardIcon).toMatch(/^data:image\/svg\+xml,/);
  expect(icon.exec(html.text)?.[1]).toBe(dashboardIcon);

  await owner.get('/statements?month=2026-1').expect(400);
  await owner.get('/statements').expect(400);
  await owner.get(`/statements?month=${month}&format=pdf`).expect(400);
  expect((await dev.get('/session').expect(200)).body.activeOrg).toMatchObject({ role: 'member', billing: false });
  const refused = await dev.get(`/statements?month=${month}`).expect(403);
  expect(refused.body.error.message).toMatch(/only the organization's owners see its statements/);
  await other.get(`/statements?month=${month}`).expect(404);
});
