import request from 'supertest';
import { extraChatModel, startGateway, testCatalogueWith, TestGateway } from '../support/gateway';

// OpenAI's reasoning models (o3, gpt-5…) refuse `max_tokens` (the fake answers as the API does): a
// request translated for them carries its cap as `max_completion_tokens`; other models keep `max_tokens`.
const O3 = { slug: 'test/o3', id: '0f3a0f3a-0f3a-4f3a-8f3a-0f3a0f3a0f3a', hostModel: 'o3' };
let g: TestGateway;

beforeAll(async () => {
  g = await startGateway({ catalogue: testCatalogueWith(extraChatModel(O3, 'fake-openai', 'Test o3')) });
});
afterAll(async () => {
  await g.settled();
  expect((await g.audit()).differences).toEqual([]);
  await g.close();
});

const lastSent = () => g.fake.requests[g.fake.requests.length - 1].body;
const ask = (model: string, extra: object = {}) =>
  request(g.baseUrl)
    .post('/api/v1/messages')
    .set('Authorization', `Bearer ${g.key}`)
    .set('anthropic-version', '2023-06-01')
    .send({ model, max_tokens: 300, messages: [{ role: 'user', content: 'hi' }], ...extra });

it('a messages client on o3 at an openai host: the cap goes as max_completion_tokens, and it is answered', async () => {
  g.fake.on(O3.hostModel, { kind: 'reply', reply: { text: 'ok', usage: { input: 5, output: 1 } } });
  const res = await ask(O3.slug, { thinking: { type: 'enabled', budget_tokens: 2048 } });
  expect(res.status).toBe(200);
  expect(lastSent()).toMatchObject({ model: 'o3', max_completion_tokens: 300, reasoning_effort: 'low' });
  expect(lastSent()).not.toHaveProperty('max_tokens');
});

it('a model that is not a reasoning one of OpenAI keeps max_tokens (servers compatible with the format know no other)', async () => {
  const res = await ask('test/gpt');
  expect(res.status).toBe(200);
  expect(lastSent()).toMatchObject({ model: 'fake-gpt', max_tokens: 300 });
  expect(lastSent()).not.toHaveProperty('max_completion_tokens');
});
