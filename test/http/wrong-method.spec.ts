import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import { startGateway, TEST_MODELS as M, TestGateway } from '../support/gateway';
import { LogCapture } from '../support/log-capture';

/**
 * A method its path does not take, answered as the API each format speaks answers it: Anthropic's
 * with 405 and an Allow header (GET /v1/messages is `405 invalid_request_error`), OpenAI's and
 * Google's as an unknown URL (404), each saying which methods the path takes.
 */
describe('a method the path does not take', () => {
  let g: TestGateway;
  const log = new LogCapture();

  beforeAll(async () => {
    g = await startGateway({ logStream: log });
  });
  afterAll(() => g.close());

  const send = (method: string, path: string, headers: Record<string, string> = {}) =>
    fetch(`${g.baseUrl}${path}`, { method, headers: { authorization: `Bearer ${g.key}`, ...headers } });

  it.each([
    ['GET', '/api/v1/messages'],
    ['PUT', '/api/v1/messages'],
    ['GET', '/api/v1/messages/count_tokens'],
  ])('%s %s on the messages surface: 405, Allow: POST, invalid_request_error, as Anthropic answers', async (method, path) => {
    const res = await send(method, path, { 'anthropic-version': '2023-06-01' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    const requestId = res.headers.get('x-request-id');
    expect(res.headers.get('request-id')).toBe(requestId);
    expect(await res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message: `method not allowed: ${method} ${path} (the path takes POST)` },
      request_id: requestId,
    });
    // Logged as a refusal, saying what it was.
    expect(await log.request(requestId!)).toMatchObject({ level: 40, status: 405, outcome: 'method_not_allowed' });
  });

  it('HEAD on the messages surface: 405 with its Allow header too', async () => {
    const res = await send('HEAD', '/api/v1/messages');
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });

  it.each([
    ['GET', '/api/v1/chat/completions', 'POST'],
    ['GET', '/api/v1/embeddings', 'POST'],
    ['GET', '/api/v1/responses', 'POST'],
    ['DELETE', '/api/v1/models', 'GET, HEAD'],
    ['POST', '/api/v1/keys/some-id', 'GET, HEAD, PATCH, DELETE'],
  ])(
    '%s %s in the OpenAI format: 404 invalid_request_error, as OpenAI answers an unknown URL, naming %s',
    async (method, path, taken) => {
      const res = await send(method, `${path}?token=abc`);
      expect(res.status).toBe(404);
      expect(res.headers.get('allow')).toBeNull();
      expect(await res.json()).toEqual({
        error: {
          message: `no such route: ${method} ${path} (the path takes ${taken})`,
          type: 'invalid_request_error',
          param: null,
          code: 'not_found',
        },
      });
    },
  );

  it("the SDKs raise what they raise for those statuses: openai's NotFoundError, Anthropic's APIError with status 405", async () => {
    const openai = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
    const notFound = await openai.get('/chat/completions').catch((e: unknown) => e);
    expect(notFound).toBeInstanceOf(OpenAI.NotFoundError);
    const anthropic = new Anthropic({ baseURL: `${g.baseUrl}/api`, apiKey: g.key, maxRetries: 0 });
    const refused = (await anthropic.get('/v1/messages').catch((e: unknown) => e)) as InstanceType<typeof Anthropic.APIError>;
    expect(refused).toBeInstanceOf(Anthropic.APIError);
    expect(refused.status).toBe(405);
    expect(refused.error).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
  });

  it("Gemini's surface: 404 NOT_FOUND, as Google answers a method its path does not take", async () => {
    const res = await send('PUT', `/api/v1beta/models/${M.gpt.slug}:generateContent`, { 'x-goog-api-key': g.key });
    expect(res.status).toBe(404);
    expect(res.headers.get('allow')).toBeNull();
    expect(await res.json()).toEqual({
      error: {
        code: 404,
        status: 'NOT_FOUND',
        message: `no such route: PUT /api/v1beta/models/${M.gpt.slug}:generateContent (the path takes GET, HEAD, POST)`,
      },
    });
  });

  it("OpenRouter's routes: 404 in OpenRouter's format, naming the methods", async () => {
    const res = await send('POST', '/api/v1/credits');
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: { code: 404, message: 'no such route: POST /api/v1/credits (the path takes GET, HEAD)' },
    });
  });

  it('a path no method takes is the unknown route it was, and a key in the path is masked either way', async () => {
    const unknown = await send('GET', '/api/v1/nothing/here');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: unknown }).error).toEqual({
      message: 'no such route: GET /api/v1/nothing/here',
      type: 'invalid_request_error',
      param: null,
      code: 'not_found',
    });
    // A key pasted where a slug goes: GET and POST take /api/v1/models/*, PUT does not.
    const keyed = await send('PUT', `/api/v1/models/${g.key}`);
    expect(keyed.status).toBe(404);
    const text = await keyed.text();
    expect(text).not.toContain(g.key);
    expect(JSON.parse(text)).toMatchObject({
      error: { message: 'no such route: PUT /api/v1/models/sk-svc-… (the path takes GET, HEAD, POST)' },
    });
  });
});
