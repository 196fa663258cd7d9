import { ExportVerifier } from '../../src/ledger-export/ledger-verify';
import { person } from '../support/dashboard';
import { startGateway, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { chatCompletion } from '../support/streams';

/** A downloaded export, checked by the standalone verifier. */
function verify(body: string) {
  const verifier = new ExportVerifier();
  for (const line of body.split('\n')) verifier.line(line);
  return verifier.finish();
}

describe('the ledger export on the management API and in the dashboard', () => {
  let g: TestGateway;
  let management: string;

  beforeAll(async () => {
    g = await startGateway();
    management = (await createKey(g.t.runtime, g.orgId, 'auditor feed', { kind: 'management' })).secret;
    for (let i = 0; i < 3; i++) expect((await chatCompletion(g.baseUrl, g.key)).status).toBe(200);
    await g.settled();
    await g.t.runtime.projector.catchUp();
  });
  afterAll(() => g.close());

  const get = (path: string, secret: string) => fetch(`${g.baseUrl}${path}`, { headers: { authorization: `Bearer ${secret}` } });

  it('exports the management key’s organization as NDJSON that verifies, ending at the chain head it publishes', async () => {
    const res = await get('/api/v1/ledger/export', management);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
    expect(res.headers.get('content-disposition')).toBe(`attachment; filename="ledger-${g.orgId}.ndjson"`);
    const report = verify(await res.text());
    expect(report.differences).toEqual([]);
    // Three served requests: each reserved and settled, at the test model's prices.
    expect(report.figures!.charged).toBeGreaterThan(0);
    expect(report.figures!.keys[g.keyId]).toBe(report.figures!.charged);
    const chain = await (await get('/api/v1/ledger/chain', management)).json();
    expect(chain).toEqual({ org_id: g.orgId, head: report.head, events: report.events, position: expect.any(Number) });
  });

  it('answers a bad period in the API’s error format, and an ordinary key with 403', async () => {
    const bad = await get('/api/v1/ledger/export?from=yesterday', management);
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ error: { message: expect.stringMatching(/^from must be a time in ISO 8601/) } });
    expect((await get('/api/v1/ledger/export', g.key)).status).toBe(403);
  });

  it('shows an owner the active organization’s chain head and lets them download its export; a member who is not an owner is refused', async () => {
    const ada = await person(g, 'ada-ledger@example.com');
    const created = await ada.post('/organizations', { name: 'Ada Ledger' }).expect(201);
    await g.t.runtime.ledger.grant(created.body.id, 2_000_000_000, 'welcome');
    const chain = await ada.get('/ledger/chain').expect(200);
    expect(chain.body).toMatchObject({ events: 1, head: expect.stringMatching(/^[0-9a-f]{64}$/) });
    const download = await ada
      .get('/ledger/export')
      .buffer(true)
      .parse((res, done) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString()));
        res.on('end', () => done(null, text));
      });
    expect(download.status).toBe(200);
    const report = verify(download.body as string);
    expect(report).toMatchObject({ orgId: created.body.id, head: chain.body.head, events: 1, differences: [] });
    expect(report.figures).toMatchObject({ granted: 2_000_000_000, balance: 2_000_000_000 });

    const bob = await person(g, 'bob-ledger@example.com');
    await g.t.runtime.identity.addMember(created.body.id, 'bob-ledger@example.com');
    await g.t.runtime.projector.catchUp();
    await bob.post('/organizations/active', { orgId: created.body.id }).expect(200);
    const refused = await bob.get('/ledger/export').expect(403);
    expect(refused.body).toMatchObject({
      error: { code: 'forbidden', message: "only the organization's owners see its ledger" },
    });
    await bob.get('/ledger/chain').expect(403);
  });
});
