import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020 from 'ajv/dist/2020';
import { startGateway, TEST_EMBEDDING_MODELS, TEST_MODELS, TestGateway } from '../support/gateway';
import { ROOT } from '../support/processes';
import { tempDir } from '../support/temp';
import { createKey } from '../support/keys';

/**
 * GET /api/v1/openapi.json: a valid OpenAPI 3.1 document (checked by an OpenAPI validator), and
 * real traffic of every surface — requests, whole replies, every streamed event's data, errors —
 * conforming to what it says.
 */

const M = TEST_MODELS;
type Doc = { paths: Record<string, Record<string, any>>; components: { schemas: Record<string, object> } };

/** The validator's own command (@seriousme/openapi-schema-validator: an ES module, run as a process). */
function validateWithLibrary(file: string): Promise<{ code: number; output: string }> {
  const cli = join(ROOT, 'node_modules/@seriousme/openapi-schema-validator/bin/validate-api-cli.js');
  return new Promise((resolve) =>
    execFile(process.execPath, [cli, file], (error, stdout, stderr) =>
      resolve({ code: error ? ((error.code as number) ?? 1) : 0, output: stdout + stderr }),
    ),
  );
}

/** Server-sent events' data, parsed (the chat-completions `[DONE]` left out). */
const eventData = (text: string): unknown[] =>
  text
    .split('\n\n')
    .map((message) =>
      message
        .split('\n')
        .filter((line) => line.startsWith('data: '))
        .map((line) => line.slice(6))
        .join('\n'),
    )
    .filter((data) => data !== '' && data !== '[DONE]')
    .map((data) => JSON.parse(data));

describe('the OpenAPI document', () => {
  let g: TestGateway;
  let doc: Doc;
  const ajv = new Ajv2020({ strict: false, validateSchema: false, allErrors: true });
  const dir = tempDir('openapi');

  beforeAll(async () => {
    // The alerts' webhook below is on 127.0.0.1: a loopback address alerts reach only where the operator allows it.
    g = await startGateway({ env: { ALERT_WEBHOOK_ALLOW_CIDRS: '127.0.0.1/32' } });
    const res = await fetch(`${g.baseUrl}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    doc = (await res.json()) as Doc;
    ajv.addSchema(doc, 'openapi.json');
  });
  afterAll(async () => {
    await g.close();
    dir.cleanup();
  });

  const schema = (pointer: string) => {
    const validate = ajv.getSchema(`openapi.json#${pointer}`);
    if (!validate) throw new Error(`no schema at ${pointer}`);
    return validate;
  };
  const conforms = (pointer: string, value: unknown) => {
    const validate = schema(pointer);
    const ok = validate(value);
    if (!ok)
      throw new Error(
        `${JSON.stringify(value).slice(0, 400)}\ndoes not conform to ${pointer}: ${ajv.errorsText(validate.errors)}`,
      );
  };
  const escape = (path: string) => path.replace(/~/g, '~0').replace(/\//g, '~1');

  /** Sends a request, and checks it and its answer against the operation the document gives for it. */
  async function exchange(
    method: 'get' | 'post' | 'put' | 'patch' | 'delete',
    template: string,
    path: string,
    /** `invalid`: a body the document itself refuses (the route must too); `key`: another key than the test's. */
    options: { body?: Record<string, unknown>; headers?: Record<string, string>; invalid?: boolean; key?: string } = {},
  ): Promise<{ status: number; body: unknown }> {
    const operation = doc.paths[template]?.[method];
    expect(operation).toBeDefined();
    const at = `/paths/${escape(template)}/${method}`;
    const requestSchema = `${at}/requestBody/content/application~1json/schema`;
    if (options.body && options.invalid) expect(schema(requestSchema)(options.body)).toBe(false);
    else if (options.body && operation.requestBody) conforms(requestSchema, options.body);
    const res = await fetch(`${g.baseUrl}${path}`, {
      method: method.toUpperCase(),
      headers: { authorization: `Bearer ${options.key ?? g.key}`, 'content-type': 'application/json', ...options.headers },
      body: options.body ? JSON.stringify(options.body) : undefined,
    });
    const text = await res.text();
    const status = String(res.status);
    expect(Object.keys(operation.responses)).toContain(status);
    const type = (res.headers.get('content-type') ?? '').split(';')[0];
    const content = `${at}/responses/${status}/content/${escape(type)}`;
    if (type === 'text/event-stream') {
      const events = eventData(text);
      expect(events.length).toBeGreaterThan(0);
      for (const data of events) conforms(`${content}/x-event-data`, data);
      return { status: res.status, body: events };
    }
    const body = type === 'application/json' ? JSON.parse(text) : text;
    conforms(`${content}/schema`, body);
    return { status: res.status, body };
  }

  it('is a valid OpenAPI 3.1 document, as an OpenAPI validator checks it', async () => {
    const file = join(dir.path, 'openapi.json');
    writeFileSync(file, JSON.stringify(doc));
    const { code, output } = await validateWithLibrary(file);
    expect(output).toContain('"valid": true');
    expect(code).toBe(0);
  });

  it('describes every surface as it answers: whole replies, streams and errors', async () => {
    const chat = { model: M.gpt.slug, max_tokens: 32, messages: [{ role: 'user', content: 'Hi' }] };
    expect((await exchange('post', '/api/v1/chat/completions', '/api/v1/chat/completions', { body: chat })).status).toBe(200);
    await exchange('post', '/api/v1/chat/completions', '/api/v1/chat/completions', {
      body: { ...chat, stream: true, stream_options: { include_usage: true } },
    });
    // Translated (a chat client on an anthropic host) as well as passed whole.
    await exchange('post', '/api/v1/chat/completions', '/api/v1/chat/completions', {
      body: { ...chat, model: M.claude.slug, stream: true },
    });
    expect(
      (await exchange('post', '/api/v1/chat/completions', '/api/v1/chat/completions', { body: { messages: [] }, invalid: true }))
        .status,
    ).toBe(400);

    const messagesHeaders = { 'anthropic-version': '2023-06-01' };
    const messages = { model: M.claude.slug, max_tokens: 32, messages: [{ role: 'user', content: 'Hi' }] };
    for (const body of [
      messages,
      { ...messages, stream: true },
      { ...messages, model: M.gpt.slug, stream: true },
      { ...messages, model: M.gpt.slug },
    ]) {
      expect((await exchange('post', '/api/v1/messages', '/api/v1/messages', { body, headers: messagesHeaders })).status).toBe(
        200,
      );
    }
    const unauthorized = await exchange('post', '/api/v1/messages', '/api/v1/messages', {
      body: messages,
      headers: { ...messagesHeaders, authorization: 'Bearer sk-svc-not-a-key' },
    });
    expect(unauthorized.status).toBe(401);
    const counted = await exchange('post', '/api/v1/messages/count_tokens', '/api/v1/messages/count_tokens', {
      body: { model: M.claude.slug, messages: [{ role: 'user', content: 'Hi' }] },
      headers: messagesHeaders,
    });
    expect(counted.status).toBe(200);

    const responses = { model: M.gpt.slug, max_output_tokens: 32, input: 'Hi' };
    expect((await exchange('post', '/api/v1/responses', '/api/v1/responses', { body: responses })).status).toBe(200);
    await exchange('post', '/api/v1/responses', '/api/v1/responses', { body: { ...responses, stream: true } });
    expect(
      (
        await exchange('post', '/api/v1/responses', '/api/v1/responses', {
          body: { ...responses, previous_response_id: 'resp_1' },
        })
      ).status,
    ).toBe(400);

    const embed = { model: TEST_EMBEDDING_MODELS.embed.slug, input: ['one', 'two'] };
    expect((await exchange('post', '/api/v1/embeddings', '/api/v1/embeddings', { body: embed })).status).toBe(200);

    const native = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 32 };
    const nativePath = `/api/v1/models/${M.gpt.slug}/chat`;
    expect((await exchange('post', '/api/v1/models/{model}/chat', nativePath, { body: native })).status).toBe(200);
    await exchange('post', '/api/v1/models/{model}/chat', nativePath, { body: { ...native, stream: true } });
    expect(
      (await exchange('post', '/api/v1/models/{model}/chat', '/api/v1/models/nobody/none/chat', { body: native })).status,
    ).toBe(404);

    const gemini = { contents: [{ role: 'user', parts: [{ text: 'Hi' }] }], generationConfig: { maxOutputTokens: 32 } };
    for (const model of [M.gpt, M.claude]) {
      const at = `/api/v1beta/models/${model.slug}`;
      expect(
        (await exchange('post', '/api/v1beta/models/{model}:generateContent', `${at}:generateContent`, { body: gemini })).status,
      ).toBe(200);
      await exchange('post', '/api/v1beta/models/{model}:streamGenerateContent', `${at}:streamGenerateContent?alt=sse`, {
        body: gemini,
      });
    }
    expect(
      (
        await exchange('post', '/api/v1beta/models/{model}:generateContent', `/api/v1beta/models/${M.gpt.slug}:generateContent`, {
          body: { contents: 'Hi' },
          invalid: true,
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await exchange('post', '/api/v1beta/models/{model}:countTokens', `/api/v1beta/models/${M.gpt.slug}:countTokens`, {
          body: gemini,
          invalid: true,
        })
      ).status,
    ).toBe(400);
    await exchange('post', '/api/v1beta/models/{model}:countTokens', `/api/v1beta/models/${M.gpt.slug}:countTokens`, {
      body: { contents: gemini.contents },
    });
    await exchange('get', '/api/v1beta/models', '/api/v1beta/models');
    await exchange('get', '/api/v1beta/models/{model}', `/api/v1beta/models/${M.claude.slug}`);
    expect((await exchange('get', '/api/v1beta/models/{model}', '/api/v1beta/models/nobody/none')).status).toBe(404);

    await exchange('get', '/api/v1/models', '/api/v1/models');
    await exchange('get', '/api/v1/models/{model}', `/api/v1/models/${M.gpt.id}`);
    await exchange('get', '/api/v1/credits', '/api/v1/credits');
    await exchange('get', '/health/ready', '/health/ready');
    await exchange('get', '/api/v1/openapi.json', '/api/v1/openapi.json');
    await g.settled();
  });

  it("describes the credits' exact figures: integers of nano-credits, or past 2^53 their digits, never floats", async () => {
    const credits = '/components/schemas/Credits';
    const { body } = await exchange('get', '/api/v1/credits', '/api/v1/credits');
    const data = (body as { data: Record<string, unknown> }).data;
    for (const field of ['total_credits_nano', 'total_usage_nano', 'reserved_nano', 'available_nano']) {
      expect(Number.isSafeInteger(data[field])).toBe(true);
      const without = { data: { ...data, [field]: undefined } };
      expect(schema(credits)(JSON.parse(JSON.stringify(without)))).toBe(false);
      expect(schema(credits)({ data: { ...data, [field]: 0.5 } })).toBe(false);
      expect(schema(credits)({ data: { ...data, [field]: '12.5' } })).toBe(false);
      conforms(credits, { data: { ...data, [field]: '9007199254740993' } });
    }
    expect(data.total_credits_nano).toBe(Math.round((data.total_credits as number) * 1e9));
  });

  it('describes the key routes as they answer: the calling key, a generation, the management API', async () => {
    const served = await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: M.gpt.slug, max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] }),
    });
    await served.text();
    const requestId = served.headers.get('x-request-id')!;
    await g.logged(requestId);
    await exchange('get', '/api/v1/key', '/api/v1/key');
    expect((await exchange('get', '/api/v1/generation', `/api/v1/generation?id=${requestId}`)).status).toBe(200);
    expect((await exchange('get', '/api/v1/generation', '/api/v1/generation?id=req_none')).status).toBe(404);
    expect((await exchange('get', '/api/v1/generation', '/api/v1/generation')).status).toBe(400);

    const { secret: manager } = await createKey(g.t.runtime, g.orgId, 'platform', { kind: 'management' });
    await g.t.runtime.projector.catchUp();
    const key = { key: manager };
    const body = { name: 'user-1', limit: 2.5, limit_reset: 'monthly', rate_limits: { requests_per_minute: 60 } };
    const created = await exchange('post', '/api/v1/keys', '/api/v1/keys', { ...key, body });
    expect(created.status).toBe(201);
    const id = (created.body as { data: { id: string } }).data.id;
    await exchange('get', '/api/v1/keys', '/api/v1/keys', key);
    await exchange('get', '/api/v1/keys/{id}', `/api/v1/keys/${id}`, key);
    const patched = await exchange('patch', '/api/v1/keys/{id}', `/api/v1/keys/${id}`, {
      ...key,
      body: { limit: null, expires_at: '2099-01-01T00:00:00Z', disabled: true },
    });
    expect(patched.status).toBe(200);
    expect(
      (await exchange('patch', '/api/v1/keys/{id}', `/api/v1/keys/${id}`, { ...key, body: { nope: 1 }, invalid: true })).status,
    ).toBe(400);
    expect((await exchange('delete', '/api/v1/keys/{id}', `/api/v1/keys/${id}`, key)).status).toBe(200);
    expect((await exchange('get', '/api/v1/keys/{id}', '/api/v1/keys/none', key)).status).toBe(404);
    expect((await exchange('get', '/api/v1/keys', '/api/v1/keys')).status).toBe(403);
    await g.settled();
  });

  it('describes the alerts routes as they answer (management key)', async () => {
    const { secret: manager } = await createKey(g.t.runtime, g.orgId, 'alerts platform', { kind: 'management' });
    await g.t.runtime.projector.catchUp();
    const key = { key: manager };
    expect((await exchange('get', '/api/v1/alerts', '/api/v1/alerts', key)).status).toBe(404);
    const body = { url: 'http://127.0.0.1:9/hooks', balance_below: 5, day_spend_above: '2.5', key_limits: true };
    const set = await exchange('put', '/api/v1/alerts', '/api/v1/alerts', { ...key, body });
    expect(set.status).toBe(200);
    expect(
      (await exchange('put', '/api/v1/alerts', '/api/v1/alerts', { ...key, body: { url: 'x', nope: 1 }, invalid: true })).status,
    ).toBe(400);
    expect((await exchange('get', '/api/v1/alerts', '/api/v1/alerts', key)).status).toBe(200);
    expect((await exchange('post', '/api/v1/alerts/secret', '/api/v1/alerts/secret', { ...key, body: {} })).status).toBe(200);
    expect((await exchange('post', '/api/v1/alerts/test', '/api/v1/alerts/test', { ...key, body: {} })).status).toBe(202);
    expect((await exchange('get', '/api/v1/alerts', '/api/v1/alerts')).status).toBe(403);
  });

  it('is built from the schemas the routes validate with: what the document refuses, the route refuses', async () => {
    const bad = { model: M.gpt.slug, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 'lots' };
    expect(schema('/components/schemas/ChatCompletionRequest')(bad)).toBe(false);
    const res = await fetch(`${g.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${g.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(bad),
    });
    expect(res.status).toBe(400);
  });
});
