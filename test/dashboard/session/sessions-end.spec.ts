import request from 'supertest';
import { operatorToolJson } from '../../support/operator-tool';
import { startGateway, startOtherInstance, TestGateway, type OtherInstance } from '../../support/gateway';

const PASSWORD = 'correct horse battery';

/** A browser's session: its cookie and CSRF token, sent by hand so that a cookie can be replayed after it is cleared. */
interface Browser {
  cookie: string;
  csrf: string;
}

const cookieOf = (setCookie: unknown): string => /mg_session=[^;]+/.exec(String(setCookie))![0];

/**
 * Dashboard sessions end everywhere: a session signed out, of a member removed, or from before a
 * password change is refused on every instance sharing the log (and Redis), at once; other
 * sessions and other people's go on.
 */
describe('dashboard sessions end everywhere', () => {
  let g: TestGateway;
  let other: OtherInstance;

  beforeAll(async () => {
    g = await startGateway({ credits: 0, redis: true });
    other = await startOtherInstance(g);
  });
  afterAll(async () => {
    await other.close();
    await g.close();
  });

  async function signUp(email: string): Promise<void> {
    await request(g.baseUrl).post('/dashboard/api/signup').send({ email, password: PASSWORD }).expect(202);
  }
  async function signIn(email: string, password = PASSWORD, base = g.baseUrl): Promise<Browser> {
    const res = await request(base).post('/dashboard/api/signin').send({ email, password }).expect(200);
    return { cookie: cookieOf(res.headers['set-cookie']), csrf: res.body.csrf };
  }
  const session = (b: Browser, base = g.baseUrl) => request(base).get('/dashboard/api/session').set('cookie', b.cookie);
  const post = (b: Browser, path: string, body: object = {}, base = g.baseUrl) =>
    request(base).post(`/dashboard/api${path}`).set('cookie', b.cookie).set('x-csrf-token', b.csrf).send(body);
  /** The session's status on both instances. */
  const statuses = async (b: Browser) => [(await session(b)).status, (await session(b, other.url)).status];

  it("signing out ends that session on every instance; the user's other sessions and other users go on", async () => {
    await signUp('ada@example.com');
    await signUp('bob@example.com');
    const laptop = await signIn('ada@example.com');
    const phone = await signIn('ada@example.com', PASSWORD, other.url);
    const bob = await signIn('bob@example.com');
    expect(await statuses(laptop)).toEqual([200, 200]);

    const out = await post(laptop, '/signout').expect(204);
    expect(String(out.headers['set-cookie'])).toMatch(/mg_session=;.*Max-Age=0/);
    // The old cookie, replayed: refused here and on the other instance, for reading and for changing.
    expect(await statuses(laptop)).toEqual([401, 401]);
    const replayed = await post(laptop, '/organizations', { name: 'After' }, other.url).expect(401);
    expect(replayed.body).toEqual({ error: { code: 'invalid_api_key', message: 'this session has ended: sign in again' } });
    // Signing out again is a 401 too (nothing to end).
    await post(laptop, '/signout').expect(401);

    expect(await statuses(phone)).toEqual([200, 200]);
    expect(await statuses(bob)).toEqual([200, 200]);
    // Signed out on the other instance: refused here.
    await post(phone, '/signout', {}, other.url).expect(204);
    expect(await statuses(phone)).toEqual([401, 401]);
    expect(await statuses(await signIn('ada@example.com'))).toEqual([200, 200]);
  });

  it('a member removed is signed out everywhere; the owner and other members are not', async () => {
    await signUp('owner@example.com');
    await signUp('dev@example.com');
    await signUp('ops@example.com');
    let owner = await signIn('owner@example.com');
    const org = await post(owner, '/organizations', { name: 'Team' }).expect(201);
    owner = { ...owner, cookie: cookieOf(org.headers['set-cookie']) };
    const dev = (await post(owner, '/members', { email: 'dev@example.com' }).expect(201)).body.userId as string;
    await post(owner, '/members', { email: 'ops@example.com' }).expect(201);
    const devHere = await signIn('dev@example.com');
    const devThere = await signIn('dev@example.com', PASSWORD, other.url);
    const ops = await signIn('ops@example.com', PASSWORD, other.url);

    await post(owner, `/members/${dev}/remove`, {}, other.url).expect(200);
    expect(await statuses(devHere)).toEqual([401, 401]);
    expect(await statuses(devThere)).toEqual([401, 401]);
    expect(await statuses(owner)).toEqual([200, 200]);
    expect(await statuses(ops)).toEqual([200, 200]);
    // Signed in again, the removed member has an account and no organization.
    const back = await signIn('dev@example.com', PASSWORD, other.url);
    expect((await session(back).expect(200)).body.organizations).toEqual([]);
  });

  it('a password change ends every other session of the user everywhere; the one that changed it goes on', async () => {
    await signUp('cy@example.com');
    await signUp('di@example.com');
    const here = await signIn('cy@example.com');
    const there = await signIn('cy@example.com', PASSWORD, other.url);
    const di = await signIn('di@example.com', PASSWORD, other.url);

    await post(here, '/password', { currentPassword: 'wrong password', newPassword: 'a new passphrase' }).expect(403);
    await post(here, '/password', { currentPassword: PASSWORD, newPassword: 'short' }).expect(400);
    expect(await statuses(there)).toEqual([200, 200]);

    const changed = await post(here, '/password', { currentPassword: PASSWORD, newPassword: 'a new passphrase' }).expect(200);
    const renewed: Browser = { cookie: cookieOf(changed.headers['set-cookie']), csrf: changed.body.csrf };
    expect(renewed.csrf).not.toBe(here.csrf);
    expect(await statuses(renewed)).toEqual([200, 200]);
    expect(await statuses(here)).toEqual([401, 401]);
    expect(await statuses(there)).toEqual([401, 401]);
    expect(await statuses(di)).toEqual([200, 200]);
    // The new password signs in; the old one no more.
    await request(g.baseUrl).post('/dashboard/api/signin').send({ email: 'cy@example.com', password: PASSWORD }).expect(401);
    expect(await statuses(await signIn('cy@example.com', 'a new passphrase', other.url))).toEqual([200, 200]);
    // The renewed session signs out like any other.
    await post(renewed, '/signout').expect(204);
    expect(await statuses(renewed)).toEqual([401, 401]);
  });

  it("the operator setting a user's password ends every session of theirs", async () => {
    await signUp('ed@example.com');
    const here = await signIn('ed@example.com');
    const there = await signIn('ed@example.com', PASSWORD, other.url);
    const set = await operatorToolJson(
      g.t.env,
      ['users', 'set-password', '--email', 'ed@example.com', '--password-stdin'],
      'set by ops 1',
    );
    expect(set).toMatchObject({ passwordChanged: true });
    expect(await statuses(here)).toEqual([401, 401]);
    expect(await statuses(there)).toEqual([401, 401]);
    expect(await statuses(await signIn('ed@example.com', 'set by ops 1'))).toEqual([200, 200]);
  });
});
