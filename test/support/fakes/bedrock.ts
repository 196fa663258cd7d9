// Amazon Bedrock Runtime as the fake upstream speaks it: Converse and ConverseStream
// (`/model/{modelId}/converse[-stream]`) and InvokeModel[WithResponseStream] with Anthropic's
// Messages body (`/model/{modelId}/invoke[-with-response-stream]`), streams in AWS's binary event
// stream encoded by AWS's codec, every call's SigV4 signature verified with AWS's signer (or its
// Bedrock API key checked), errors as Bedrock sends them (`{"message"}` with `x-amzn-ErrorType`).
import { createHash, randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Sha256 } from '@aws-crypto/sha256-js';
import { EventStreamCodec } from '@smithy/eventstream-codec';
import { SignatureV4 } from '@smithy/signature-v4';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import {
  anthropicMessage,
  anthropicStream,
  DEFAULT_REPLY,
  fillerPieces,
  finishOf,
  type Finish,
  type FakeBehaviour,
  type FakeReply,
  type FakeUsage,
  type Frame,
  halves,
  type ReceivedRequest,
  signatureOf,
  splitText,
  type Stream,
  upToPiece,
  WIRE_USAGE,
  wired,
  withUsage,
} from '../fake-upstream';
import { converseThinkingProblem, messagesThinkingProblem, samplingProblem } from './anthropic-thinking';
import { structuredOutputOf, structuredReply } from './structured-output';

/** The AWS account the fake takes signatures of: the test gateway's credentials (its environment's). */
export const BEDROCK_TEST_CREDENTIALS = {
  accessKeyId: 'AKIAFAKEBEDROCK00001',
  secretAccessKey: 'fake/bedrock/secret/key/0123456789abcdefgh',
};

/** The Bedrock API key the fake takes as a bearer token (the test catalogue's FAKE_BEDROCK_API_KEY). */
export const BEDROCK_TEST_API_KEY = 'upstream-bedrock-api-key';

/** The secret the fake checks signatures with: AWS's side of the account, which a test may rotate. */
let accountSecret = BEDROCK_TEST_CREDENTIALS.secretAccessKey;

/** Makes the fake check signatures with another secret (as after a rotation the gateway missed); returns the undo. */
export function rotateBedrockSecret(secret: string): () => void {
  accountSecret = secret;
  return () => (accountSecret = BEDROCK_TEST_CREDENTIALS.secretAccessKey);
}

export interface BedrockRoute {
  /** The model id as Bedrock reads it from the path (percent-decoded). */
  modelId: string;
  api: 'converse' | 'invoke';
  streamed: boolean;
}

const ROUTE = /^\/model\/([^/]+)\/(converse|converse-stream|invoke|invoke-with-response-stream)$/;

/** The Bedrock operation a path names, or null. */
export function bedrockRoute(path: string): BedrockRoute | null {
  const match = ROUTE.exec(path);
  if (!match) return null;
  let modelId: string;
  try {
    modelId = decodeURIComponent(match[1]);
  } catch {
    return null;
  }
  const operation = match[2];
  return { modelId, api: operation.startsWith('converse') ? 'converse' : 'invoke', streamed: operation.includes('stream') };
}

/** What the fake-upstream server lends a Bedrock call: its response, its timers, and how it cuts a connection. */
export interface BedrockCall {
  req: IncomingMessage;
  res: ServerResponse;
  received: ReceivedRequest;
  pause(ms?: number): Promise<void>;
  gone(): boolean;
  cut(): void;
}

const codec = new EventStreamCodec(toUtf8, fromUtf8);
const str = (value: string) => ({ type: 'string' as const, value });

/** One event of a stream, as Bedrock frames it. */
export const eventMessage = (type: string, payload: string): Uint8Array =>
  codec.encode({
    headers: { ':event-type': str(type), ':content-type': str('application/json'), ':message-type': str('event') },
    body: fromUtf8(payload),
  });

/** An exception inside a stream, as Bedrock frames it. */
export const exceptionMessage = (type: string, message: string): Uint8Array =>
  codec.encode({
    headers: { ':exception-type': str(type), ':content-type': str('application/json'), ':message-type': str('exception') },
    body: fromUtf8(JSON.stringify({ message })),
  });

/** Bedrock pads each stream event with `p` (letters and digits, a length that hides the content's). */
const padding = (payload: object) =>
  'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0'.slice(0, 1 + (JSON.stringify(payload).length % 50));

const CONVERSE_STOP: Record<Finish, string> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  stop_sequence: 'stop_sequence',
};

/**
 * Converse's usage: `inputTokens` is the input neither read from nor written to the cache; the writes
 * are split by time to live in `cacheDetails` (1 hour first), present only when there were writes.
 */
export function converseUsage(u: FakeUsage) {
  const { cacheRead = 0, cacheWrite = 0, cacheWrite1h = 0 } = u;
  const written = cacheWrite + cacheWrite1h;
  const details = [
    ...(cacheWrite1h ? [{ ttl: '1h', inputTokens: cacheWrite1h }] : []),
    ...(cacheWrite ? [{ ttl: '5m', inputTokens: cacheWrite }] : []),
  ];
  return {
    inputTokens: u.input,
    outputTokens: u.output,
    totalTokens: u.input + cacheRead + written + u.output,
    cacheReadInputTokens: cacheRead,
    cacheWriteInputTokens: written,
    ...(details.length ? { cacheDetails: details } : {}),
  };
}

const usageField = (reply: FakeReply) =>
  reply.wireUsage !== undefined ? { usage: WIRE_USAGE } : reply.usage ? { usage: converseUsage(reply.usage) } : {};

/** Anthropic's models name the stop sequence that matched in their additional response fields. */
const additionalFields = (reply: FakeReply) =>
  finishOf(reply) === 'stop_sequence' && reply.stopSequence !== undefined
    ? { additionalModelResponseFields: { stop_sequence: reply.stopSequence } }
    : {};

const parseArgs = (s: string) => {
  try {
    return JSON.parse(s);
  } catch {
    return {};
  }
};

/** A whole Converse reply. */
export function converseReply(reply: FakeReply) {
  const content: object[] = reply.thinking
    ? [{ reasoningContent: { reasoningText: { text: reply.thinking, signature: signatureOf(reply.thinking) } } }]
    : [];
  if (reply.text || !reply.toolCalls?.length) content.push({ text: reply.text ?? '' });
  for (const c of reply.toolCalls ?? [])
    content.push({ toolUse: { toolUseId: c.id, name: c.name, input: parseArgs(c.arguments) } });
  return {
    output: { message: { role: 'assistant', content } },
    stopReason: CONVERSE_STOP[finishOf(reply)],
    ...usageField(reply),
    metrics: { latencyMs: 412 },
    ...additionalFields(reply),
  };
}

/** A ConverseStream's events (event type as `event`, payload as `data`), as frames for the fake's pieces. */
export function converseStream(reply: FakeReply, pieces?: number): Stream {
  const ev = (type: string, payload: object, piece = false): Frame => ({
    event: type,
    data: JSON.stringify({ ...payload, p: padding(payload) }),
    piece,
  });
  const body: Frame[] = [];
  let index = 0;
  if (reply.thinking) {
    for (const text of splitText(reply.thinking))
      body.push(ev('contentBlockDelta', { contentBlockIndex: index, delta: { reasoningContent: { text } } }, true));
    body.push(
      ev('contentBlockDelta', {
        contentBlockIndex: index,
        delta: { reasoningContent: { signature: signatureOf(reply.thinking) } },
      }),
    );
    body.push(ev('contentBlockStop', { contentBlockIndex: index++ }));
  }
  if (reply.text || !reply.toolCalls?.length) {
    for (const text of splitText(reply.text ?? '', pieces))
      body.push(ev('contentBlockDelta', { contentBlockIndex: index, delta: { text } }, true));
    body.push(ev('contentBlockStop', { contentBlockIndex: index++ }));
  }
  for (const call of reply.toolCalls ?? []) {
    body.push(ev('contentBlockStart', { contentBlockIndex: index, start: { toolUse: { toolUseId: call.id, name: call.name } } }));
    for (const input of halves(call.arguments))
      body.push(ev('contentBlockDelta', { contentBlockIndex: index, delta: { toolUse: { input } } }, true));
    body.push(ev('contentBlockStop', { contentBlockIndex: index++ }));
  }
  const tail = [
    ev('messageStop', { stopReason: CONVERSE_STOP[finishOf(reply)], ...additionalFields(reply) }),
    ev('metadata', { ...usageField(reply), metrics: { latencyMs: 412 } }),
  ];
  return { head: [ev('messageStart', { role: 'assistant' })], body, tail };
}

/**
 * InvokeModelWithResponseStream for an Anthropic model: each event of Anthropic's stream as a
 * `chunk` whose `bytes` are the event's JSON in base64; the last (message_stop) also carries
 * Bedrock's `amazon-bedrock-invocationMetrics`.
 */
export function invokeStream(req: any, reply: FakeReply, pieces?: number): Stream {
  const messages = anthropicStream(req, reply, pieces);
  const chunk = (frame: Frame, last: boolean): Frame => {
    let data = frame.data;
    if (last && reply.usage) {
      const u = reply.usage;
      const metrics = {
        inputTokenCount: u.input,
        outputTokenCount: u.output,
        invocationLatency: 412,
        firstByteLatency: 120,
        cacheReadInputTokenCount: u.cacheRead ?? 0,
        cacheWriteInputTokenCount: (u.cacheWrite ?? 0) + (u.cacheWrite1h ?? 0),
      };
      data = JSON.stringify({ ...JSON.parse(data), 'amazon-bedrock-invocationMetrics': metrics });
    }
    const bytes = Buffer.from(wired(data, reply)).toString('base64');
    return { event: 'chunk', data: JSON.stringify({ bytes, p: padding({ bytes }) }), piece: frame.piece };
  };
  return {
    head: messages.head.map((f) => chunk(f, false)),
    body: messages.body.map((f) => chunk(f, false)),
    tail: messages.tail.map((f, i) => chunk(f, i === messages.tail.length - 1)),
  };
}

/** Bedrock's error types by status, as `x-amzn-ErrorType` names them. */
const ERROR_TYPES: Record<number, string> = {
  400: 'ValidationException',
  403: 'AccessDeniedException',
  404: 'ResourceNotFoundException',
  408: 'ModelTimeoutException',
  424: 'ModelErrorException',
  429: 'ThrottlingException',
  500: 'InternalServerException',
  503: 'ServiceUnavailableException',
};

const ERROR_MESSAGES: Record<string, string> = {
  ThrottlingException: 'Too many requests, please wait before trying again.',
  ServiceUnavailableException: 'Bedrock is unable to process your request.',
  InternalServerException: 'The server encountered an internal error while processing the request.',
};

function sendError(
  res: ServerResponse,
  status: number,
  message?: string,
  type = ERROR_TYPES[status] ?? 'InternalServerException',
) {
  res.writeHead(status, {
    'content-type': 'application/json',
    'x-amzn-requestid': randomUUID(),
    'x-amzn-errortype': `${type}:http://internal.amazon.com/coral/com.amazon.bedrock/`,
  });
  // The fakes' common suffix after what AWS says, so a test can tell this fake's text reached the client.
  res.end(JSON.stringify({ message: message ?? `${ERROR_MESSAGES[type] ?? type} Fake upstream error (HTTP ${status}).` }));
}

const SIGNATURE_MISMATCH =
  'The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.';

const AUTHORIZATION =
  /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/([^/]+)\/aws4_request, SignedHeaders=([^,]+), Signature=([0-9a-f]{64})$/;

/** `20261126T111500Z` as a Date. */
const amzDate = (value: string) =>
  new Date(
    `${value.slice(0, 4)}-${value.slice(4, 6)}-${value.slice(6, 8)}T${value.slice(9, 11)}:${value.slice(11, 13)}:${value.slice(13, 15)}Z`,
  );

/**
 * Whether the call may go on, as Bedrock decides: a bearer token must be the account's API key; a
 * SigV4 signature is recomputed with AWS's signer over the call as it arrived (its signed headers,
 * its path, its body's hash) from the account's secret. The refusal Bedrock sends when not, or null.
 */
async function refusal(call: BedrockCall): Promise<{ status: number; type: string; message: string } | null> {
  const { req, received } = call;
  const authorization = req.headers.authorization ?? '';
  if (authorization.startsWith('Bearer '))
    return authorization.slice(7) === BEDROCK_TEST_API_KEY
      ? null
      : { status: 403, type: 'AccessDeniedException', message: 'Authentication failed: Please make sure your API Key is valid.' };
  const parsed = AUTHORIZATION.exec(authorization);
  if (!parsed) return { status: 403, type: 'MissingAuthenticationTokenException', message: 'Missing Authentication Token' };
  const [, accessKeyId, day, region, service, signedHeaders] = parsed;
  if (accessKeyId !== BEDROCK_TEST_CREDENTIALS.accessKeyId)
    return {
      status: 403,
      type: 'UnrecognizedClientException',
      message: 'The security token included in the request is invalid.',
    };
  const date = String(req.headers['x-amz-date'] ?? '');
  const contentHash = req.headers['x-amz-content-sha256'];
  if (service !== 'bedrock' || !date.startsWith(day) || contentHash !== createHash('sha256').update(received.raw).digest('hex'))
    return { status: 403, type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
  const headers: Record<string, string> = {};
  for (const name of signedHeaders.split(';')) headers[name] = String(req.headers[name] ?? '');
  const signer = new SignatureV4({
    credentials: {
      accessKeyId,
      secretAccessKey: accountSecret,
      sessionToken: headers['x-amz-security-token'] || undefined,
    },
    region,
    service,
    sha256: Sha256,
  });
  const [hostname, port] = headers.host.split(':');
  const expected = await signer.sign(
    {
      method: req.method ?? 'POST',
      protocol: 'http:',
      hostname,
      port: port ? Number(port) : undefined,
      path: received.path,
      query: {},
      headers,
      body: received.raw,
    },
    { signingDate: amzDate(date) },
  );
  return expected.headers.authorization === authorization
    ? null
    : { status: 403, type: 'InvalidSignatureException', message: SIGNATURE_MISMATCH };
}

const STREAM_HEAD = { 'content-type': 'application/vnd.amazon.eventstream', 'x-amzn-bedrock-content-type': 'application/json' };

/** A whole message with its checksum wrong: what a stream reader must refuse. */
const corruptMessage = () => {
  const message = eventMessage('contentBlockDelta', JSON.stringify({ contentBlockIndex: 0, delta: { text: 'trunc' } }));
  message[message.length - 1] ^= 0xff;
  return message;
};

/**
 * What Converse's input validation refuses of stop sequences and tool names (the API reference's
 * InferenceConfiguration and ToolSpecification constraints), in the words AWS's validation uses.
 */
function converseValidation(body: any): string | null {
  const stops = body.inferenceConfig?.stopSequences;
  if (Array.isArray(stops) && stops.length > 2500)
    return "1 validation error detected: Value at 'inferenceConfig.stopSequences' failed to satisfy constraint: Member must have length less than or equal to 2500";
  const tools: any[] = Array.isArray(body.toolConfig?.tools) ? body.toolConfig.tools : [];
  for (const [i, tool] of tools.entries()) {
    const name = tool?.toolSpec?.name;
    if (typeof name !== 'string') continue;
    const at = `'toolConfig.tools.${i + 1}.member.toolSpec.name'`;
    if (name.length > 64)
      return `1 validation error detected: Value '${name}' at ${at} failed to satisfy constraint: Member must have length less than or equal to 64`;
    if (!/^[a-zA-Z0-9_-]+$/.test(name))
      return `1 validation error detected: Value '${name}' at ${at} failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+`;
  }
  return null;
}

/** One Bedrock call: authorized, then answered as the behaviour configured for its model says. */
export async function serveBedrock(route: BedrockRoute, call: BedrockCall, configured: FakeBehaviour | undefined): Promise<void> {
  const { res, received } = call;
  const refused = await refusal(call);
  if (refused) return sendError(res, refused.status, refused.message, refused.type);
  const body = received.body;
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return sendError(res, 400, 'Malformed input request, please reformat your input and try again.');
  if (route.api === 'invoke') {
    // Bedrock's Anthropic body: the version in it, the model in the path and the stream in the operation.
    if (body.anthropic_version !== 'bedrock-2023-05-31')
      return sendError(res, 400, 'Malformed input request: #: required key [anthropic_version] not found');
    for (const key of ['model', 'stream'])
      if (key in body) return sendError(res, 400, `Malformed input request: #: extraneous key [${key}] is not permitted`);
  } else if (!Array.isArray(body.messages)) {
    return sendError(res, 400, "1 validation error detected: Value null at 'messages' failed to satisfy constraint");
  } else {
    // Only Claude and Nova take toolChoice (AWS's ToolChoice reference); the others refuse it by name.
    const choice = body.toolConfig?.toolChoice;
    const kind = choice && Object.keys(choice)[0];
    if (kind && !/(^|[./])(anthropic|amazon\.nova)/.test(route.modelId))
      return sendError(
        res,
        400,
        `This model doesn't support the toolConfig.toolChoice.${kind} field. Remove toolConfig.toolChoice.${kind} and try again.`,
      );
    const problem = converseValidation(body);
    if (problem) return sendError(res, 400, problem, 'ValidationException');
  }
  // What Claude refuses beside thinking, passed on as Bedrock passes on a model's refusal.
  const thinkingProblem =
    route.api === 'invoke'
      ? (messagesThinkingProblem(body) ?? samplingProblem(route.modelId, body.temperature, body.top_p))
      : (converseThinkingProblem(body) ??
        samplingProblem(route.modelId, body.inferenceConfig?.temperature, body.inferenceConfig?.topP));
  if (thinkingProblem) return sendError(res, 400, `The model returned the following errors: ${thinkingProblem}`);
  // Structured output: Converse's outputConfig.textFormat, InvokeModel's output_config.format (Anthropic's body).
  const structured = structuredOutputOf(route.api === 'converse' ? 'converse' : 'anthropic', body);
  if (typeof structured === 'string') return sendError(res, 400, structured, 'ValidationException');

  const b: FakeBehaviour = configured ?? { kind: 'reply', reply: DEFAULT_REPLY };
  const reply = 'reply' in b ? structuredReply(withUsage(b.reply), structured) : DEFAULT_REPLY;
  const ids = { 'x-amzn-requestid': randomUUID() };
  const whole = (r: FakeReply) =>
    wired(JSON.stringify(route.api === 'converse' ? converseReply(r) : anthropicMessage({ model: route.modelId }, r)), r);
  const stream = (r: FakeReply, pieces?: number) =>
    route.api === 'converse' ? converseStream(r, pieces) : invokeStream({ model: route.modelId }, r, pieces);
  // Invoke's chunks hold the usage text already wired (in base64).
  const encode = (frames: Frame[], r: FakeReply) =>
    frames.map((f) => eventMessage(f.event!, route.api === 'converse' ? wired(f.data, r) : f.data));

  const play = async (messages: Uint8Array[], end: 'end' | 'cut', gapMs = 0) => {
    res.writeHead(200, { ...STREAM_HEAD, ...ids });
    res.flushHeaders();
    for (const [i, message] of messages.entries()) {
      if (i > 0) await call.pause(gapMs);
      if (call.gone()) return;
      if (end === 'cut' && i === messages.length - 1) return void res.write(message, () => call.cut());
      res.write(message);
    }
    if (end === 'cut') call.cut();
    else res.end();
  };

  switch (b.kind) {
    case 'reply': {
      await b.released;
      await call.pause(b.firstByteDelayMs);
      if (call.gone()) return;
      if (!route.streamed) {
        res.writeHead(200, { 'content-type': 'application/json', ...ids });
        return void res.end(whole(reply));
      }
      const s = stream(reply, b.pieces);
      return play(encode([...s.head, ...s.body, ...s.tail], reply), 'end', b.chunkDelayMs);
    }
    case 'status':
      if (b.body === undefined) return sendError(res, b.status);
      res.writeHead(b.status, { 'content-type': 'application/json', ...ids });
      return void res.end(b.body);
    case 'hang':
      return;
    case 'hang_after_headers':
      res.writeHead(200, route.streamed ? { ...STREAM_HEAD, ...ids } : { 'content-type': 'application/json', ...ids });
      return void res.flushHeaders();
    case 'cut': {
      if (!route.streamed) {
        const full = whole(reply);
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(full), ...ids });
        return void res.write(full.slice(0, full.length >> 1), () => call.cut());
      }
      return play(encode(upToPiece(stream(reply), b.afterPieces), reply), 'cut');
    }
    case 'malformed': {
      if (!route.streamed) {
        res.writeHead(200, { 'content-type': 'application/json', ...ids });
        return void res.end('{"output":{"message":');
      }
      const frames = upToPiece(stream(DEFAULT_REPLY, fillerPieces(b.afterPieces)), b.afterPieces);
      return play([...encode(frames, DEFAULT_REPLY), corruptMessage()], 'end');
    }
    case 'stream_error': {
      if (!route.streamed) return sendError(res, 500);
      const frames = upToPiece(stream(DEFAULT_REPLY, fillerPieces(b.afterPieces)), b.afterPieces);
      const exception = exceptionMessage(
        'modelStreamErrorException',
        'The model encountered an error while streaming the response. Retry your request.',
      );
      return play([...encode(frames, DEFAULT_REPLY), exception], 'end');
    }
    case 'verbatim':
      // A streamed call's bytes are binary: the body's characters are its bytes (latin1).
      res.writeHead(200, route.streamed ? { ...STREAM_HEAD, ...ids } : { 'content-type': 'application/json', ...ids });
      return void res.end(route.streamed ? Buffer.from(b.body, 'latin1') : b.body);
    case 'count':
      return sendError(res, 400, 'token counts are not answered on this operation');
  }
}
