import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import request from 'supertest';
import { person } from '../support/dashboard';
import { startGateway, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';
import { LogCapture } from '../support/log-capture';

/**
 * A real key's secret pasted into every name and label the gateway keeps or echoes: organization
 * and key names (dashboard, management API, operator), an e-mail, a grant's reason, a model path.
 * What is stored (the SQLite log, the read models' snapshot), answered and logged holds none of it.
 */
describe('a secret pasted into a name is masked before it is stored or echoed', () => {
  let g: TestGateway;
  let logs: LogCapture;
  /** The random part of a working key's secret: what must appear nowhere. */
  let tail: string;
  const replies: string[] = [];

  beforeAll(async () => {
    logs = new LogCapture();
    g = await startGateway({ credits: 1_000_000_000, logStream: logs });
    tail = g.key.slice('sk-svc-'.length);
  });
  afterAll(async () => {
    // Closed by hand: the log and the snapshot are read once the service has stopped (see the last test).
    if (existsSync(g.t.env.DATA_DIR)) await g.close();
  });

  /** Keeps a reply's body for the last test, and checks it now. */
  const seen = <R extends { text: string }>(res: R): R => {
    replies.push(res.text);
    expect(res.text).not.toContain(tail);
    return res;
  };

  it('organizations, keys and grants named with a secret keep the name, masked', async () => {
    const ada = await person(g, 'ada@example.com');
    const org = seen(await ada.post('/organizations', { name: `Acme ${g.key}` }).expect(201));
    expect(org.body.name).toBe('Acme sk-svc-…');
    const created = await ada.agent
      .post('/dashboard/api/keys')
      .set('x-csrf-token', ada.csrf)
      .set('cookie', /mg_session=[^;]+/.exec(String(org.headers['set-cookie']))![0])
      .send({ name: `ci ${g.key}` })
      .expect(201);
    seen({ text: JSON.stringify({ ...created.body, secret: null }) });
    expect(created.body.name).toBe('ci sk-svc-…');
    seen(
      await ada
        .get('/keys')
        .set('cookie', /mg_session=[^;]+/.exec(String(org.headers['set-cookie']))![0])
        .expect(200),
    );
    seen(
      await ada
        .get('/session')
        .set('cookie', /mg_session=[^;]+/.exec(String(org.headers['set-cookie']))![0])
        .expect(200),
    );

    const management = await createKey(g.t.runtime, g.orgId, 'platform', { kind: 'management' });
    const api = (method: 'post' | 'patch' | 'get', path: string) =>
      request(g.baseUrl)[method](`/api/v1/keys${path}`).set('authorization', `Bearer ${management.secret}`);
    const made = await api('post', '')
      .send({ name: `made by ${g.key}` })
      .expect(201);
    seen({ text: JSON.stringify({ ...made.body, key: null }) });
    expect(made.body.data.name).toBe('made by sk-svc-…');
    const renamed = seen(
      await api('patch', `/${made.body.data.id}`)
        .send({ name: `renamed ${g.key}` })
        .expect(200),
    );
    expect(renamed.body.data.name).toBe('renamed sk-svc-…');
    seen(await api('get', '').expect(200));

    const operatorKey = await createKey(g.t.runtime, g.orgId, `operator's ${g.key}`);
    expect(operatorKey.name).toBe("operator's sk-svc-…");
    const { grant } = await g.t.runtime.ledger.grant(g.orgId, 1, `refund for ${g.key}`);
    expect(grant.reason).toBe('refund for sk-svc-…');
    const { name } = await g.t.runtime.identity.createOrganization(`Ops ${g.key}`);
    expect(name).toBe('Ops sk-svc-…');
  });

  it('an e-mail holding a secret is refused, without echoing it', async () => {
    const signup = seen(
      await request(g.baseUrl)
        .post('/dashboard/api/signup')
        .send({ email: `${g.key}@example.com`, password: 'correct horse battery' }),
    );
    expect(signup.status).toBe(400);
    expect(signup.body.error.message).toBe('an email address must not hold an API key');
    const ada = await person(g, 'grace@example.com');
    const org = await ada.post('/organizations', { name: 'Grace' }).expect(201);
    const add = seen(
      await ada.agent
        .post('/dashboard/api/members')
        .set('x-csrf-token', ada.csrf)
        .set('cookie', /mg_session=[^;]+/.exec(String(org.headers['set-cookie']))![0])
        .send({ email: `${g.key}@example.com` }),
    );
    expect(add.status).toBe(404);
    expect(add.body.error.message).toMatch(/^sk-svc-…@example\.com cannot be added yet: /);
  });

  it('no error echoes a secret the client sent: a model path, a field name, a body that is not JSON', async () => {
    const bearer = { authorization: `Bearer ${g.key}` };
    for (const path of [
      `/api/v1/models/${g.key}`,
      `/api/v1/models/openai/${g.key}`,
      `/api/v1/models/${encodeURIComponent(`x/${g.key}`)}`,
    ]) {
      const res = seen(await request(g.baseUrl).get(path).set(bearer));
      expect(res.status).toBe(404);
      expect(res.body.error.message).toMatch(/^model ".*sk-svc-…" is not in the catalogue/);
    }
    const management = await createKey(g.t.runtime, g.orgId, 'platform 2', { kind: 'management' });
    const field = seen(
      await request(g.baseUrl)
        .post('/api/v1/keys')
        .set('authorization', `Bearer ${management.secret}`)
        .send({ name: 'x', [g.key]: 1 }),
    );
    expect(field.status).toBe(400);
    expect(field.body.error.message).toBe('sk-svc-… is not allowed');
    expect(JSON.stringify(field.body)).not.toContain(g.key);
    const notJson = seen(
      await request(g.baseUrl).post('/api/v1/chat/completions').set(bearer).set('content-type', 'application/json').send(g.key),
    );
    expect(notJson.status).toBe(400);
    const limit = await person(g, 'lin@example.com');
    const org = await limit.post('/organizations', { name: 'Lin' }).expect(201);
    const cookie = /mg_session=[^;]+/.exec(String(org.headers['set-cookie']))![0];
    const key = await limit.agent
      .post('/dashboard/api/keys')
      .set('x-csrf-token', limit.csrf)
      .set('cookie', cookie)
      .send({ name: 'k' });
    const badLimit = seen(
      await limit.agent
        .post(`/dashboard/api/keys/${key.body.id}/limit`)
        .set('x-csrf-token', limit.csrf)
        .set('cookie', cookie)
        .send({ limit: `sk-${'a'.repeat(30)}`, reset: 'never' }),
    );
    expect(badLimit.status).toBe(400);
    expect(badLimit.body.error.message).toContain('"sk-…" is not an amount of credits');
  });

  it('the log, the read models saved at stop and the service log hold no secret', async () => {
    await g.t.runtime.projector.catchUp();
    // Stopped as the service stops: the read models are saved to DATA_DIR on the way.
    await g.app.close();
    await g.t.runtime.close();
    const dataDir = g.t.env.DATA_DIR;
    try {
      const db = new Database(join(dataDir, 'events.sqlite'), { readonly: true });
      const rows = db.prepare('SELECT stream_id, type, data FROM events').all() as Array<{ type: string; data: string }>;
      db.close();
      expect(rows.map((r) => r.type)).toEqual(expect.arrayContaining(['OrganizationCreated', 'ApiKeyCreated', 'ApiKeyUpdated']));
      const stored = rows.map((r) => JSON.stringify(r)).join('\n');
      expect(stored).toContain('sk-svc-…');
      expect(stored).not.toContain(tail);
      const snapshot = readFileSync(join(dataDir, 'read-models.snapshot.json'), 'utf8');
      expect(snapshot).toContain('Acme sk-svc-…');
      expect(snapshot).not.toContain(tail);
      expect(logs.raw.join('')).toContain('/api/v1/models/sk-svc-[redacted]');
      expect(logs.raw.join('')).not.toContain(tail);
      expect(replies.join('\n')).not.toContain(tail);
    } finally {
      await g.fake.close();
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
