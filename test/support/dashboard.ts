import request from 'supertest';
import type { TestGateway } from './gateway';

/** A person with a browser, signed up and signed in: a cookie jar and the CSRF token the app hands out. */
export async function person(g: TestGateway, email: string) {
  const agent = request.agent(g.baseUrl);
  await agent.post('/dashboard/api/signup').send({ email, password: 'correct horse battery' }).expect(202);
  // Signing up starts no session: the person signs in, as the web app does next.
  const signin = await agent.post('/dashboard/api/signin').send({ email, password: 'correct horse battery' }).expect(200);
  const csrf: string = signin.body.csrf;
  return {
    agent,
    csrf,
    post: (path: string, body: unknown = {}) =>
      agent
        .post(`/dashboard/api${path}`)
        .set('x-csrf-token', csrf)
        .send(body as object),
    get: (path: string) => agent.get(`/dashboard/api${path}`),
    cookie: String(signin.headers['set-cookie']),
  };
}
