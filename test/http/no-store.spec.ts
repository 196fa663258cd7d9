import request from 'supertest';
import { person } from '../support/dashboard';
import { startGateway, TestGateway } from '../support/gateway';
import { createKey } from '../support/keys';

/**
 * Answers that hold a secret (a key's, a webhook's signing secret, a session's CSRF token) or the
 * signed-in person's own data carry `Cache-Control: no-store`: no cache, the browser's included, keeps them.
 */

let g: TestGateway;
let management: string;
beforeAll(async () => {
  g = await startGateway({ credits: 0 });
  management = (await createKey(g.t.runtime, g.orgId, 'platform', { kind: 'management' })).secret;
  await g.t.runtime.projector.catchUp();
});
afterAll(async () => {
  await g.close();
});

const api = (method: 'post' | 'put', path: string, body?: object) =>
  request(g.baseUrl)[method](`/api/v1${path}`).set('authorization', `Bearer ${management}`).send(body);

// A receiver's address nothing here calls: no alert is sent in this file.
const url = 'https://receiver.example/hooks';

it('the management API: a new key, the alerts set (the first time with their secret), a new signing secret', async () => {
  const key = await api('post', '/keys', { name: 'ci' }).expect(201);
  expect(key.body.key).toMatch(/^sk-svc-/);
  expect(key.headers['cache-control']).toBe('no-store');
  const set = await api('put', '/alerts', { url }).expect(200);
  expect(set.body.secret).toMatch(/^whsec_/);
  expect(set.headers['cache-control']).toBe('no-store');
  const rotated = await api('post', '/alerts/secret').expect(200);
  expect(rotated.body.secret).toMatch(/^whsec_/);
  expect(rotated.headers['cache-control']).toBe('no-store');
});

it('the dashboard: its page, and every answer of its API, refusals included', async () => {
  const page = await request(g.baseUrl).get('/dashboard/').expect(200);
  expect(page.headers['cache-control']).toBe('no-store');
  const ada = await person(g, 'ada@example.com');
  await ada.post('/organizations', { name: 'Ada Labs' }).expect(201);
  const key = await ada.post('/keys', { name: 'laptop' }).expect(201);
  expect(key.body.secret).toMatch(/^sk-svc-/);
  expect(key.headers['cache-control']).toBe('no-store');
  const alerts = await ada.post('/alerts', { url }).expect(200);
  expect(alerts.body.secret).toMatch(/^whsec_/);
  expect(alerts.headers['cache-control']).toBe('no-store');
  expect((await ada.post('/alerts/secret').expect(200)).headers['cache-control']).toBe('no-store');
  expect((await ada.get('/session').expect(200)).headers['cache-control']).toBe('no-store');
  expect((await request(g.baseUrl).get('/dashboard/api/session').expect(401)).headers['cache-control']).toBe('no-store');
  // The web app's scripts and styles are the same for everyone: cached as before.
  expect((await request(g.baseUrl).get('/dashboard/app.js').expect(200)).headers['cache-control']).toBe('public, max-age=300');
});
