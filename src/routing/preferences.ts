import { createHash } from 'node:crypto';
import type { CanonicalRequest } from '../canonical/canonical';
import { ApiError } from '../http/api-error';
import { NO_PREFERENCES, PROVIDER_SORTS, ProviderPreferences, ProviderSort } from './plan';

/**
 * What a request asks of routing, read from its body (or, on the messages surface, whose body is
 * the messages format's own, from headers): OpenRouter's `provider` preferences and `models`
 * fallbacks, and which conversation it continues (for cache-sticky routing). Bad values are the
 * client's 400, naming the field.
 */
export interface RoutingAsk {
  provider: ProviderPreferences;
  /** Models to try after the one asked for, in order (catalogue slugs or UUIDs). */
  models: string[];
  /**
   * The conversation the request continues, when it can be told (see conversationOf): worked out
   * when first asked, once. Routing asks only when it has hosts to choose among: an agent's prompt
   * prefix is not serialized and hashed for a model served by one host.
   */
  conversation: () => Conversation | null;
}

/** The conversation of `request`, worked out on the first call and kept. */
function conversationWhenAsked(
  request: CanonicalRequest,
  headers: Record<string, string | string[] | undefined>,
): () => Conversation | null {
  let conversation: Conversation | null | undefined;
  return () => (conversation === undefined ? (conversation = conversationOf(request, headers)) : conversation);
}

/** A conversation, as a hash its stickiness is stored under, and how long a host's cache of it lives. */
export interface Conversation {
  key: string;
  ttlMs: number;
}

/** The messages surface's headers for what the other surfaces take in the body: the same JSON. */
export const PROVIDER_HEADER = 'x-gateway-provider';
export const MODELS_HEADER = 'x-gateway-models';

/** The agent CLIs' own session headers (Codex's `session_id`, Claude Code's), in the order they are read. */
export const SESSION_HEADERS = ['x-claude-code-session-id', 'session_id', 'x-session-id'] as const;

const MAX_HOSTS_NAMED = 64;
const MAX_FALLBACK_MODELS = 8;
/**
 * The shortest prefix providers cache, in characters (about 1,024 tokens: OpenAI's and Anthropic's
 * minimum): a shorter prompt reads nothing from a cache, so its host need not be kept.
 */
export const MIN_CACHEABLE_CHARS = 4096;
/** A prompt cache lives 5 minutes from its last use by default, an hour when the request asks for that. */
export const CACHE_TTL_MS = 5 * 60_000;
export const CACHE_TTL_1H_MS = 60 * 60_000;

type Raw = Record<string, unknown>;
const isObject = (v: unknown): v is Raw => typeof v === 'object' && v !== null && !Array.isArray(v);
const bad = (field: string, problem: string) => new ApiError('invalid_request', `${field}: ${problem}`);

function hostIds(value: unknown, field: string): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.length > MAX_HOSTS_NAMED || !value.every((v) => typeof v === 'string' && v !== ''))
    throw bad(field, `must be an array of at most ${MAX_HOSTS_NAMED} host ids (strings)`);
  return value as string[];
}

/** A price in US dollars per million tokens (a number or a decimal string), as nano-credits per million. */
function perMillion(value: unknown, field: string): number | undefined {
  if (value === undefined || value === null) return undefined;
  const number = typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isFinite(number) || number < 0 || number > 1e6)
    throw bad(field, 'must be a price in US dollars per million tokens (a number from 0)');
  return Math.round(number * 1e9);
}

/**
 * OpenRouter's `provider` object: `order`, `only`, `ignore` (host ids of the catalogue),
 * `allow_fallbacks`, `sort` (a name, or `{"by": name}`), `max_price` (`prompt`, `completion`).
 * Its other fields (data policies, quantizations) concern OpenRouter's own providers and are
 * ignored; a `max_price` on anything but tokens is refused rather than not enforced.
 */
export function providerPreferences(value: unknown, field = 'provider'): ProviderPreferences {
  if (value === undefined || value === null) return NO_PREFERENCES;
  if (!isObject(value)) throw bad(field, 'must be an object');
  const fallbacks = value.allow_fallbacks;
  if (fallbacks !== undefined && fallbacks !== null && typeof fallbacks !== 'boolean')
    throw bad(`${field}.allow_fallbacks`, 'must be true or false');
  const preferences: ProviderPreferences = { allowFallbacks: fallbacks !== false };
  const order = hostIds(value.order, `${field}.order`);
  const only = hostIds(value.only, `${field}.only`);
  const ignore = hostIds(value.ignore, `${field}.ignore`);
  if (order) preferences.order = order;
  if (only) preferences.only = only;
  if (ignore) preferences.ignore = ignore;
  const sort = isObject(value.sort) ? value.sort.by : value.sort;
  if (sort !== undefined && sort !== null) {
    if (!PROVIDER_SORTS.includes(sort as ProviderSort))
      throw bad(`${field}.sort`, `must be ${PROVIDER_SORTS.map((s) => `"${s}"`).join(', ')}`);
    preferences.sort = sort as ProviderSort;
  }
  const max = value.max_price;
  if (max !== undefined && max !== null) {
    if (!isObject(max)) throw bad(`${field}.max_price`, 'must be {"prompt": …, "completion": …}');
    const other = Object.keys(max).find((k) => k !== 'prompt' && k !== 'completion' && max[k] != null);
    if (other)
      throw bad(`${field}.max_price.${other}`, 'is not supported here: only "prompt" and "completion" (per million tokens)');
    const prompt = perMillion(max.prompt, `${field}.max_price.prompt`);
    const completion = perMillion(max.completion, `${field}.max_price.completion`);
    preferences.maxPrice = {
      ...(prompt === undefined ? {} : { prompt }),
      ...(completion === undefined ? {} : { completion }),
    };
  }
  return preferences;
}

/** OpenRouter's `models`: fallback models in order (the one asked for is tried first, and not twice). */
export function fallbackModels(value: unknown, asked: string, field = 'models'): string[] {
  if (value === undefined || value === null) return [];
  if (
    !Array.isArray(value) ||
    value.length > MAX_FALLBACK_MODELS ||
    !value.every((v) => typeof v === 'string' && v.trim() !== '')
  )
    throw bad(field, `must be an array of at most ${MAX_FALLBACK_MODELS} model slugs or ids`);
  const seen = new Set([asked.trim().toLowerCase()]);
  return (value as string[]).filter((m) => {
    const key = m.trim().toLowerCase();
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** A header's JSON (the messages surface's provider and models); a list of models may also be comma-separated. */
function headerJson(value: string | string[] | undefined, name: string, list: boolean): unknown {
  if (value === undefined) return undefined;
  const text = (Array.isArray(value) ? value.join(',') : value).trim();
  if (list && !text.startsWith('[')) return text.split(',').map((m) => m.trim());
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw bad(name, list ? 'must be a JSON array or a comma-separated list of models' : 'must be a JSON object');
  }
}

/** Anything of the request's body marking an hour of caching: a messages `cache_control` with `ttl: "1h"`, or `prompt_cache_retention: "24h"`. */
function asksLongCache(body: Raw | undefined): boolean {
  if (!body) return false;
  if (body.prompt_cache_retention === '24h') return true;
  const stack: unknown[] = [body.system, body.tools, body.messages];
  while (stack.length > 0) {
    const item = stack.pop();
    if (Array.isArray(item)) stack.push(...(item as unknown[]));
    else if (isObject(item)) {
      if (isObject(item.cache_control) && item.cache_control.ttl === '1h') return true;
      if (Array.isArray(item.content)) stack.push(item.content);
    }
  }
  return false;
}

/**
 * The conversation a request continues, by the first of: the client's `prompt_cache_key`, its
 * `metadata.user_id` (Claude Code puts its session there), an agent CLI's session header, or else
 * a hash of the prompt's cacheable prefix (instructions, tools, first message: what stays the same
 * turn after turn of one conversation). Null for a request with none of them whose prefix is too
 * short to be cached.
 */
export function conversationOf(
  request: CanonicalRequest,
  headers: Record<string, string | string[] | undefined>,
): Conversation | null {
  const body = request.original?.body;
  const metadata = isObject(body?.metadata) ? body.metadata : undefined;
  const header = SESSION_HEADERS.map((name) => headers[name]).find((v): v is string => typeof v === 'string' && v !== '');
  const named =
    (typeof body?.prompt_cache_key === 'string' && body.prompt_cache_key !== '' && `key:${body.prompt_cache_key}`) ||
    (typeof metadata?.user_id === 'string' && metadata.user_id !== '' && `user:${metadata.user_id}`) ||
    (header !== undefined && `session:${header}`) ||
    null;
  // The prefix only when nothing names the conversation: serializing an agent's long instructions
  // and tools on every request would be wasted on a request that carries its key.
  const first = request.messages[0];
  const prefix = named || !first ? '' : JSON.stringify([request.system, request.tools, first]);
  const source = named || (prefix.length >= MIN_CACHEABLE_CHARS ? `prefix:${prefix}` : null);
  if (source === null) return null;
  return {
    key: createHash('sha256').update(source).digest('base64url').slice(0, 32),
    ttlMs: asksLongCache(body) ? CACHE_TTL_1H_MS : CACHE_TTL_MS,
  };
}

/**
 * What a request of the chat-completions, responses or native surface asks of routing, from its
 * body's `provider` and `models`.
 */
export function routingOfBody(
  body: Raw,
  asked: string,
  request: CanonicalRequest,
  headers: Record<string, string | string[] | undefined>,
): RoutingAsk {
  return {
    provider: providerPreferences(body.provider),
    models: fallbackModels(body.models, asked),
    conversation: conversationWhenAsked(request, headers),
  };
}

/** What a messages request asks of routing: the same JSON in the x-gateway-provider and x-gateway-models headers. */
export function routingOfHeaders(
  asked: string,
  request: CanonicalRequest,
  headers: Record<string, string | string[] | undefined>,
): RoutingAsk {
  return {
    provider: providerPreferences(headerJson(headers[PROVIDER_HEADER], PROVIDER_HEADER, false), PROVIDER_HEADER),
    models: fallbackModels(headerJson(headers[MODELS_HEADER], MODELS_HEADER, true), asked, MODELS_HEADER),
    conversation: conversationWhenAsked(request, headers),
  };
}

/** The body's routing fields, which are the gateway's: a host of the client's format is sent the body without them. */
export function withoutRouting<Body extends object>(body: Body): Body {
  if (!('provider' in body) && !('models' in body)) return body;
  const kept = { ...body } as Raw;
  delete kept.provider;
  delete kept.models;
  return kept as Body;
}
