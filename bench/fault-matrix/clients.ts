/**
 * The fault matrix's clients: one request on any surface (chat completions, messages, Responses,
 * native), whole or streamed, to a model on an `openai` or an `anthropic` host, read as a client
 * reads it. Each request carries its own `x-request-id`, so that the ledger's events for it can be
 * found in the log; its outcome says what the client got: a status, whether the reply was complete
 * (a whole JSON body, or a stream's terminal event), the cost the reply shows, and the text delivered.
 */
import { createParser } from 'eventsource-parser';
import { Dispatcher } from 'undici';
import { tokensForChars } from '../../src/inference/tokens';

export const SURFACES = ['chat-completions', 'messages', 'responses', 'native'] as const;
export type Surface = (typeof SURFACES)[number];
export const HOSTS = ['openai', 'anthropic'] as const;
export type HostKind = (typeof HOSTS)[number];

export interface Kind {
  surface: Surface;
  host: HostKind;
  streamed: boolean;
}

/** Every surface × host kind × whole/streamed: the mixed load cycles through them. */
export const KINDS: Kind[] = SURFACES.flatMap((surface) =>
  HOSTS.flatMap((host) => [false, true].map((streamed) => ({ surface, host, streamed }))),
);
export const kindName = (k: Kind) => `${k.surface} ${k.streamed ? 'streamed' : 'whole'} on ${k.host}`;

/** Catalogue prices (US dollars per million tokens) of every bench model, and the same in nano-credits per million tokens. */
export const PRICES = { input: '1.00', output: '2.00', cacheRead: '0.10', cacheWrite: '1.25', cacheWrite1h: '2.00' };
const NANO_PER_M = Object.fromEntries(Object.entries(PRICES).map(([k, v]) => [k, Math.round(Number(v) * 1e9)])) as Record<
  keyof typeof PRICES,
  number
>;

/** The bench's catalogue slug of a model on `host`; `slow` is the one whose streams stay open. */
export const slugOf = (host: HostKind, slow = false) => `fm/${host}${slow ? '-slow' : ''}`;

export interface Outcome {
  id: string;
  kind: Kind;
  /** The reply's status; null when none came (refused, or the connection ended before the headers). */
  status: number | null;
  /** A whole reply's JSON body read, or a stream's terminal event received. */
  complete: boolean;
  /** An error event after the terminal one, or instead of it. */
  errorEvent: boolean;
  /** The charge the reply shows (nano-credits): its cost, or its usage at the catalogue's prices; null: none shown. */
  costNano: number | null;
  /** Characters of text the client received. */
  deliveredChars: number;
  /** Why the request ended without a complete reply (a connection error, an abort). */
  failure: string | null;
  /** The start of an error reply's body (a status other than 200). */
  errorBody: string | null;
  /** No process was listening (the gateway killed, not yet restarted): the request never reached a gateway. */
  refused: boolean;
}

export const deliveredTokens = (o: Outcome) => tokensForChars(o.deliveredChars);

const CONTENT = 'Say something about fault injection, please.';
const MAX_TOKENS = 200;

function request(kind: Kind, slow: boolean): { path: string; headers: Record<string, string>; body: object } {
  const model = slugOf(kind.host, slow);
  const stream = kind.streamed ? { stream: true } : {};
  const messages = [{ role: 'user', content: CONTENT }];
  switch (kind.surface) {
    case 'chat-completions':
      return {
        path: '/api/v1/chat/completions',
        headers: {},
        body: {
          model,
          messages,
          max_tokens: MAX_TOKENS,
          ...stream,
          ...(kind.streamed ? { stream_options: { include_usage: true } } : {}),
        },
      };
    case 'messages':
      return {
        path: '/api/v1/messages',
        headers: { 'anthropic-version': '2023-06-01' },
        body: { model, messages, max_tokens: MAX_TOKENS, ...stream },
      };
    case 'responses':
      return {
        path: '/api/v1/responses',
        headers: {},
        body: { model, input: CONTENT, max_output_tokens: MAX_TOKENS, ...stream },
      };
    case 'native':
      return { path: `/api/v1/models/${model}/chat`, headers: {}, body: { messages, max_tokens: MAX_TOKENS, ...stream } };
  }
}

// --- reading replies (JSON of no declared type: small accessors) ------------------------------

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const at = (v: unknown, ...path: Array<string | number>): unknown =>
  path.reduce<unknown>(
    (x, k) => (typeof k === 'number' ? (Array.isArray(x) ? x[k] : undefined) : isObject(x) ? x[k] : undefined),
    v,
  );
const num = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
const str = (v: unknown): string => (typeof v === 'string' ? v : '');
const parse = (text: string): unknown => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

/** A cost in credits, as chat completions and Responses show it, in nano-credits. */
const creditsCost = (v: unknown): number | null => (typeof v === 'number' ? Math.round(v * 1e9) : null);

/** A messages usage object at the catalogue's prices: ceil(Σ tokens × price / 1e6), as the ledger charges. */
function messagesCost(usage: unknown): number | null {
  if (!isObject(usage) || typeof usage.output_tokens !== 'number') return null;
  const writes1h = num(at(usage, 'cache_creation', 'ephemeral_1h_input_tokens'));
  const writes5m = isObject(usage.cache_creation)
    ? num(at(usage, 'cache_creation', 'ephemeral_5m_input_tokens'))
    : num(usage.cache_creation_input_tokens);
  const weighted =
    num(usage.input_tokens) * NANO_PER_M.input +
    num(usage.cache_read_input_tokens) * NANO_PER_M.cacheRead +
    writes5m * NANO_PER_M.cacheWrite +
    writes1h * NANO_PER_M.cacheWrite1h +
    num(usage.output_tokens) * NANO_PER_M.output;
  return Math.ceil(weighted / 1e6);
}

/** A whole reply's cost and text. */
function readWhole(surface: Surface, body: unknown): { costNano: number | null; chars: number } {
  switch (surface) {
    case 'chat-completions':
      return {
        costNano: creditsCost(at(body, 'usage', 'cost')),
        chars: str(at(body, 'choices', 0, 'message', 'content')).length,
      };
    case 'messages': {
      const content = at(body, 'content');
      const chars = Array.isArray(content) ? content.reduce<number>((n, block) => n + str(at(block, 'text')).length, 0) : 0;
      return { costNano: messagesCost(at(body, 'usage')), chars };
    }
    case 'responses': {
      const output = at(body, 'output');
      const chars = Array.isArray(output)
        ? output.reduce<number>(
            (n, item) =>
              n +
              (Array.isArray(at(item, 'content'))
                ? (at(item, 'content') as unknown[]).reduce<number>((m, part) => m + str(at(part, 'text')).length, 0)
                : 0),
            0,
          )
        : 0;
      return { costNano: creditsCost(at(body, 'usage', 'cost')), chars };
    }
    case 'native': {
      const nano = at(body, 'cost_nano');
      return { costNano: typeof nano === 'number' ? nano : null, chars: str(at(body, 'text')).length };
    }
  }
}

/** A stream as its client follows it: text delivered, terminal event, error events, the cost shown. */
class StreamReader {
  complete = false;
  errorEvent = false;
  chars = 0;
  costNano: number | null = null;
  private messagesUsage: Json = {};

  constructor(private readonly surface: Surface) {}

  event(name: string | undefined, data: string): void {
    if (this.surface === 'chat-completions' && data === '[DONE]') {
      this.complete = true;
      return;
    }
    const json = parse(data);
    const type = name ?? str(at(json, 'type'));
    if (type === 'error' || (this.surface === 'chat-completions' && isObject(at(json, 'error')))) {
      this.errorEvent = true;
      return;
    }
    switch (this.surface) {
      case 'chat-completions': {
        this.chars += str(at(json, 'choices', 0, 'delta', 'content')).length;
        const cost = creditsCost(at(json, 'usage', 'cost'));
        if (cost !== null) this.costNano = cost;
        return;
      }
      case 'messages':
        if (type === 'message_start' && isObject(at(json, 'message', 'usage')))
          this.messagesUsage = { ...this.messagesUsage, ...(at(json, 'message', 'usage') as Json) };
        else if (type === 'message_delta' && isObject(at(json, 'usage')))
          this.messagesUsage = { ...this.messagesUsage, ...(at(json, 'usage') as Json) };
        else if (type === 'content_block_delta') this.chars += str(at(json, 'delta', 'text')).length;
        else if (type === 'message_stop') {
          this.complete = true;
          this.costNano = messagesCost(this.messagesUsage);
        }
        return;
      case 'responses':
        if (type === 'response.output_text.delta') this.chars += str(at(json, 'delta')).length;
        else if (type === 'response.completed') {
          this.complete = true;
          this.costNano = creditsCost(at(json, 'response', 'usage', 'cost'));
        } else if (type === 'response.failed' || type === 'response.incomplete') this.errorEvent = true;
        return;
      case 'native':
        if (type === 'delta') this.chars += str(at(json, 'text')).length;
        else if (type === 'done') {
          this.complete = true;
          const nano = at(json, 'cost_nano');
          this.costNano = typeof nano === 'number' ? nano : null;
        }
        return;
    }
  }
}

export interface SendOptions {
  origin: string;
  secret: string;
  id: string;
  kind: Kind;
  /** The model whose streams stay open (the disconnect scenario). */
  slow?: boolean;
  signal?: AbortSignal;
  /** Called once the first piece of text has arrived. */
  onText?: () => void;
}

/** Sends one request and reads its reply to the end (or until it fails or `signal` aborts it). */
export async function send(dispatcher: Dispatcher, options: SendOptions): Promise<Outcome> {
  const { kind, id } = options;
  const r = request(kind, options.slow ?? false);
  const auth: Record<string, string> =
    kind.surface === 'messages' ? { 'x-api-key': options.secret } : { authorization: `Bearer ${options.secret}` };
  const outcome: Outcome = {
    id,
    kind,
    status: null,
    complete: false,
    errorEvent: false,
    costNano: null,
    deliveredChars: 0,
    failure: null,
    errorBody: null,
    refused: false,
  };
  let reader: StreamReader | null = null;
  try {
    const response = await dispatcher.request({
      origin: options.origin,
      path: r.path,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': id, ...auth, ...r.headers },
      body: JSON.stringify(r.body),
      signal: options.signal,
      headersTimeout: 30_000,
      bodyTimeout: 30_000,
    });
    outcome.status = response.statusCode;
    if (response.statusCode !== 200 || !kind.streamed) {
      const text = await response.body.text();
      if (response.statusCode !== 200) outcome.errorBody = text.slice(0, 200);
      if (response.statusCode === 200) {
        const body = parse(text);
        if (isObject(body)) {
          const whole = readWhole(kind.surface, body);
          Object.assign(outcome, { complete: true, costNano: whole.costNano, deliveredChars: whole.chars });
        }
      }
      return outcome;
    }
    const stream = (reader = new StreamReader(kind.surface));
    let announced = false;
    const parser = createParser({ onEvent: (e) => stream.event(e.event, e.data) });
    for await (const chunk of response.body) {
      parser.feed((chunk as Buffer).toString('utf8'));
      if (!announced && stream.chars > 0) {
        announced = true;
        options.onText?.();
      }
    }
  } catch (error) {
    const { name, message, code } = error as Error & { code?: string };
    outcome.failure = name === 'AbortError' ? 'aborted' : message;
    outcome.refused = code === 'ECONNREFUSED';
  }
  if (reader)
    Object.assign(outcome, {
      complete: reader.complete,
      errorEvent: reader.errorEvent,
      costNano: reader.costNano,
      deliveredChars: reader.chars,
    });
  return outcome;
}
