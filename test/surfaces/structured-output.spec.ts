import { GoogleGenAI } from '@google/genai';
import OpenAI from 'openai';
import type { ReceivedRequest } from '../support/fake-upstream';
import { startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { NEW_KIND_MODELS, receivedFor, useAwsTestCredentials, withNewKinds } from '../support/new-kinds';

/**
 * Structured output through the gateway, with the official clients: each surface's field reaches each
 * host kind as that API's own field (the fakes refuse a wrong shape and answer JSON only when asked,
 * see fakes/structured-output.ts), and the client gets the JSON back; a mode no host takes is a 400
 * in the client's format, before any host is called.
 */
const M = TEST_MODELS;
let g: TestGateway;
let openai: OpenAI;
let google: GoogleGenAI;
let restoreAws: () => void;

beforeAll(async () => {
  restoreAws = useAwsTestCredentials();
  g = await startGateway(withNewKinds);
  openai = new OpenAI({ baseURL: `${g.baseUrl}/api/v1`, apiKey: g.key, maxRetries: 0 });
  google = new GoogleGenAI({ apiKey: g.key, httpOptions: { baseUrl: `${g.baseUrl}/api` } });
});
afterAll(async () => {
  await g.settled();
  const report = await g.audit();
  expect(report.differences).toEqual([]);
  await g.close();
  restoreAws();
});

const SCHEMA = {
  type: 'object',
  properties: { name: { type: 'string' }, legs: { type: 'integer' } },
  required: ['name', 'legs'],
  additionalProperties: false,
};
/** What the fakes answer for SCHEMA (an instance of it), where the configured text is not JSON. */
const ANIMAL = { name: 'fake', legs: 1 };

const lastFor = (model: { hostModel: string }): ReceivedRequest => {
  const hits = g.fake.requests.filter((r) => (r.model ?? r.body?.model) === model.hostModel);
  return hits[hits.length - 1];
};

const chatSchema = { type: 'json_schema' as const, json_schema: { name: 'animal', schema: SCHEMA, strict: true } };
const ask = [{ role: 'user' as const, content: 'Name an animal.' }];

describe('chat completions response_format json_schema', () => {
  it('reaches a gemini host as responseMimeType + responseJsonSchema, and the JSON comes back, whole and streamed', async () => {
    const model = NEW_KIND_MODELS.gemini;
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const completion = await openai.chat.completions.create({ model: model.slug, messages: ask, response_format: chatSchema });
    expect(lastFor(model).body.generationConfig).toMatchObject({
      responseMimeType: 'application/json',
      responseJsonSchema: SCHEMA,
    });
    expect(JSON.parse(completion.choices[0].message.content!)).toEqual(ANIMAL);
    const stream = await openai.chat.completions.create({
      model: model.slug,
      messages: ask,
      response_format: chatSchema,
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
    expect(JSON.parse(text)).toEqual(ANIMAL);
  });

  it('reaches an anthropic host as output_config.format (the schema alone)', async () => {
    g.fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const completion = await openai.chat.completions.create({ model: M.claude.slug, messages: ask, response_format: chatSchema });
    expect(lastFor(M.claude).body.output_config).toEqual({ format: { type: 'json_schema', schema: SCHEMA } });
    expect(JSON.parse(completion.choices[0].message.content!)).toEqual(ANIMAL);
  });

  it('reaches a Responses host as text.format, its name and strictness beside its type', async () => {
    const model = NEW_KIND_MODELS.responses;
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const completion = await openai.chat.completions.create({ model: model.slug, messages: ask, response_format: chatSchema });
    expect(lastFor(model).body.text).toEqual({ format: { type: 'json_schema', name: 'animal', schema: SCHEMA, strict: true } });
    expect(JSON.parse(completion.choices[0].message.content!)).toEqual(ANIMAL);
  });

  it("reaches Bedrock's Converse as outputConfig.textFormat, the schema as JSON text", async () => {
    const model = NEW_KIND_MODELS.bedrockConverse;
    const before = g.fake.requests.length;
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const completion = await openai.chat.completions.create({ model: model.slug, messages: ask, response_format: chatSchema });
    const [sent] = receivedFor(g, model, before);
    expect(sent.body.outputConfig).toEqual({
      textFormat: { type: 'json_schema', structure: { jsonSchema: { schema: JSON.stringify(SCHEMA), name: 'animal' } } },
    });
    expect(JSON.parse(completion.choices[0].message.content!)).toEqual(ANIMAL);
  });

  it('reaches an openai host whole, as the client wrote it', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const completion = await openai.chat.completions.create({ model: M.gpt.slug, messages: ask, response_format: chatSchema });
    expect(lastFor(M.gpt).body.response_format).toEqual(chatSchema);
    expect(JSON.parse(completion.choices[0].message.content!)).toEqual(ANIMAL);
  });
});

describe('the Gemini surface (@google/genai) asking for JSON, as Gemini CLI does', () => {
  it('reaches a gemini host with its own responseMimeType and responseJsonSchema', async () => {
    const model = NEW_KIND_MODELS.gemini;
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const response = await google.models.generateContent({
      model: model.slug,
      contents: 'Name an animal.',
      config: { responseMimeType: 'application/json', responseJsonSchema: SCHEMA },
    });
    const config = lastFor(model).body.generationConfig;
    expect(config).toMatchObject({ responseMimeType: 'application/json', responseJsonSchema: SCHEMA });
    expect(config).not.toHaveProperty('responseSchema');
    expect(JSON.parse(response.text!)).toEqual(ANIMAL);
  });

  it('reaches an openai host as response_format json_schema (named, as the API requires)', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const response = await google.models.generateContent({
      model: M.gpt.slug,
      contents: 'Name an animal.',
      config: { responseMimeType: 'application/json', responseJsonSchema: SCHEMA },
    });
    expect(lastFor(M.gpt).body.response_format).toEqual({
      type: 'json_schema',
      json_schema: { name: 'response', schema: SCHEMA },
    });
    expect(JSON.parse(response.text!)).toEqual(ANIMAL);
  });

  it('asks a host that takes a schema only for JSON mode: refused 400 INVALID_ARGUMENT, naming the field and the host', async () => {
    const before = g.fake.requests.length;
    const res = await fetch(`${g.baseUrl}/api/v1beta/models/${M.claude.slug}:generateContent`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-goog-api-key': g.key },
      body: JSON.stringify({
        contents: [{ parts: [{ text: 'Name an animal, in JSON.' }] }],
        generationConfig: { responseMimeType: 'application/json' },
      }),
    });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { status: string; message: string } };
    expect(error.status).toBe('INVALID_ARGUMENT');
    expect(error.message).toMatch(
      /generationConfig.responseMimeType "application\/json" without a schema: host fake-anthropic takes structured output only as json_schema/,
    );
    expect(g.fake.requests.length).toBe(before);
  });
});

describe('Responses text.format', () => {
  it('reaches a chat-completions host as response_format, nested as that API nests it, and is echoed', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const format = { type: 'json_schema' as const, name: 'animal', schema: SCHEMA, strict: true };
    const response = await openai.responses.create({ model: M.gpt.slug, input: 'Name an animal.', text: { format } });
    expect(lastFor(M.gpt).body.response_format).toEqual(chatSchema);
    expect(JSON.parse(response.output_text)).toEqual(ANIMAL);
    expect(response.text?.format).toEqual(format);
  });

  it("JSON mode reaches a Responses host whole; the host, as OpenAI's, wants the word in the input messages, not the instructions", async () => {
    const model = NEW_KIND_MODELS.responses;
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const format = { type: 'json_object' as const };
    const told = await openai.responses.create({
      model: model.slug,
      instructions: 'Be brief.',
      input: [{ role: 'user', content: 'Name an animal, as JSON.' }],
      text: { format },
    });
    expect(lastFor(model).body.text).toEqual({ format });
    expect(JSON.parse(told.output_text)).toEqual(expect.any(Object));
    // A host here is no OpenAI API (a compatible server, for admission): it is called, and its 400 comes back as OpenAI's would.
    const before = g.fake.requests.length;
    const refused = await openai.responses
      .create({ model: model.slug, instructions: 'Answer in JSON.', input: 'Name an animal.', text: { format } })
      .catch((error: unknown) => error);
    expect(g.fake.requests.length).toBe(before + 1);
    expect(refused).toMatchObject({ status: 400 });
    expect(String((refused as Error).message)).toMatch(/Response input messages must contain the word 'json'/);
  });
});

describe('messages output_config.format', () => {
  it('reaches a gemini host as responseJsonSchema', async () => {
    const model = NEW_KIND_MODELS.gemini;
    g.fake.on(model.hostModel, { kind: 'reply', reply: { text: 'A cat.' } });
    const res = await fetch(`${g.baseUrl}/api/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({
        model: model.slug,
        max_tokens: 200,
        messages: ask,
        output_config: { format: { type: 'json_schema', schema: SCHEMA } },
      }),
    });
    expect(res.status).toBe(200);
    const message = (await res.json()) as { content: Array<{ type: string; text: string }> };
    expect(lastFor(model).body.generationConfig).toMatchObject({
      responseMimeType: 'application/json',
      responseJsonSchema: SCHEMA,
    });
    expect(JSON.parse(message.content[0].text)).toEqual(ANIMAL);
  });
});

describe('a mode no host of the model takes', () => {
  it('chat completions json_object on a model served by Anthropic: 400 in the chat-completions format, no host called', async () => {
    const before = g.fake.requests.length;
    const refused = await openai.chat.completions
      .create({
        model: M.claude.slug,
        messages: [{ role: 'user', content: 'Name an animal, in JSON.' }],
        response_format: { type: 'json_object' },
      })
      .then(
        () => null,
        (error: unknown) => error,
      );
    expect(refused).toBeInstanceOf(OpenAI.BadRequestError);
    expect((refused as InstanceType<typeof OpenAI.BadRequestError>).message).toMatch(
      /no host of model "test\/claude" takes this request: response_format json_object: host fake-anthropic takes structured output only as json_schema \(its output_config.format\)/,
    );
    expect(g.fake.requests.length).toBe(before);
  });
});
