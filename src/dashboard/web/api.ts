// The dashboard API client: JSON in and out, the CSRF header on every state-changing request,
// and one error type carrying the server's message for the user.

export interface User {
  id: string;
  email: string;
}
export interface OrgRef {
  id: string;
  name: string;
}
export interface Credits {
  granted: number;
  spent: number;
  reserved: number;
  available: number;
}
export interface Session {
  user: User;
  csrf: string;
  organizations: OrgRef[];
  /** `role`, `manageKeys` and `billing`: what the signed-in person may do in the active organization. */
  activeOrg: (OrgRef & { credits: Credits; role: 'owner' | 'member'; manageKeys: boolean; billing: boolean }) | null;
}
export interface Member {
  userId: string;
  /** Null for members added before emails were recorded with them. */
  email: string | null;
  role: 'owner' | 'member';
  manageKeys: boolean;
  addedAt: string;
  you: boolean;
}
export interface Config {
  signupEnabled: boolean;
  baseUrls: { chatCompletions: string; messages: string };
}
export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  status: 'active' | 'revoked' | 'disabled' | 'expired';
  /** Credits charged to it, all time. */
  spent?: string;
  /** Its credit limit in credits, when it has one; how it resets; what it counts now (charges in the period and open holds). */
  limit?: string | null;
  limitReset?: 'never' | 'daily' | 'weekly' | 'monthly' | null;
  limitUsage?: string | null;
  /** A management key manages keys through the API and cannot call models. */
  kind?: 'ordinary' | 'management';
  /** A management key that may also issue credit notes. */
  billing?: boolean;
  rateLimits?: { requestsPerMinute?: number; tokensPerMinute?: number } | null;
  expiresAt?: string | null;
}
export interface CreatedKey {
  id: string;
  name: string;
  prefix: string;
  secret: string;
  createdAt: string;
  kind: 'ordinary' | 'management';
  billing: boolean;
}
export interface UsageRow {
  requestId: string;
  time: string;
  surface: string;
  model: string;
  host: string | null;
  keyId: string;
  keyName: string;
  /** Uncached input; the cache's reads and writes are counted apart. */
  inputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
  outputTokens: number;
  /** Uses of tools the host ran itself, by class (`webSearch`…); absent from older servers. */
  hostedToolUses?: Record<string, number>;
  cost: number;
  costNano?: number;
  /** What credit notes refunded of it (absent from an older server). */
  refunded?: number;
  refundedNano?: number;
  /** The token classes billed by the gateway's estimate. */
  estimated?: string[];
  latencyMs: number | null;
  status: string;
  /** Every host call on the way (retries and hosts passed over included); absent from older servers' rows. */
  attempts?: { host: string; credential: string | null; status: number | null; reason: string; durationMs: number }[];
}
export interface UsagePage {
  data: UsageRow[];
  page: number;
  pageSize: number;
  total: number;
  totals: { requests: number; cost: number; costNano?: number };
  spendPerDay: { day: string; cost: number; costNano?: number }[];
}
export interface Model {
  id: string;
  name: string;
  /** chat, or embedding (not for the playground's conversation). */
  kind: 'chat' | 'embedding';
}

/** The playground's stream, in the native route's events: `delta`s of text, then `done`, or `error`. */
export interface StreamDelta {
  text: string;
}
export interface StreamDone {
  finish_reason: string;
  /** `input_tokens` is the uncached input; the cache's reads and writes are counted apart. */
  usage: { input_tokens: number; output_tokens: number; cache_read_tokens: number; cache_write_tokens: number };
  /** Null when the request was not billed. */
  cost: number | null;
  cost_nano: number | null;
}
export interface StreamError {
  error: { code: string; message: string };
}

const BASE = '/dashboard/api';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** Seconds to wait before retrying (429), when the server says. */
    readonly retryAfterSeconds: number | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const isAbort = (error: unknown): boolean => error instanceof DOMException && error.name === 'AbortError';

export const messageOf = (error: unknown): string => (error instanceof Error ? error.message : String(error));

let csrf: string | null = null;
export function setCsrf(token: string | null): void {
  csrf = token;
}

let onUnauthorized: (() => void) | null = null;
/** Called when a signed-in request comes back 401: the session ended (expired or signed out elsewhere). */
export function setUnauthorizedHandler(handler: () => void): void {
  onUnauthorized = handler;
}

/**
 * A failure's body: the dashboard answers `{ error: { code, message }, retryAfterSeconds? }`, but a
 * proxy in between may answer anything, so every field is checked before use.
 */
interface ErrorBody {
  error?: { code?: unknown; message?: unknown; retryAfterSeconds?: unknown } | null;
  retryAfterSeconds?: unknown;
}

async function toApiError(res: Response, path: string): Promise<ApiError> {
  let body: ErrorBody | null = null;
  try {
    body = (await res.json()) as ErrorBody | null;
  } catch {
    // Not JSON (a proxy's error page): fall back to the status below.
  }
  const err = body?.error;
  const message = typeof err?.message === 'string' && err.message ? err.message : `Request failed (HTTP ${res.status}).`;
  const code = typeof err?.code === 'string' ? err.code : `http_${res.status}`;
  const retry = Number(body?.retryAfterSeconds ?? err?.retryAfterSeconds ?? res.headers.get('retry-after'));
  if (res.status === 401 && path !== '/signin' && path !== '/signup' && path !== '/session') onUnauthorized?.();
  return new ApiError(res.status, code, message, Number.isFinite(retry) && retry > 0 ? Math.ceil(retry) : null);
}

/** The active organization's ledger chain: its head link and how many events it holds (GET /ledger/chain). */
export interface LedgerChain {
  head: string;
  events: number;
  position: number;
}

/** Where the active organization's ledger export downloads from (NDJSON, for `model-gateway ledger verify`). */
export const LEDGER_EXPORT_URL = `${BASE}/ledger/export`;

/** Sends a request; resolves to the raw response when 2xx, else throws ApiError. */
export async function request(
  method: 'GET' | 'POST',
  path: string,
  body?: unknown,
  signal?: AbortSignal,
  accept = 'application/json',
): Promise<Response> {
  const headers: Record<string, string> = { accept };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET' && csrf) headers['x-csrf-token'] = csrf;
  let res: Response;
  try {
    res = await fetch(BASE + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      signal,
    });
  } catch (error) {
    if (isAbort(error)) throw error;
    throw new ApiError(0, 'network_error', 'Could not reach the server. Check your connection and try again.');
  }
  if (!res.ok) throw await toApiError(res, path);
  return res;
}

/** A JSON request; 204 resolves to undefined. */
export async function api<T>(method: 'GET' | 'POST', path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const res = await request(method, path, body, signal);
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

/** A query string from the non-empty values. */
export function query(params: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== '' && v != null) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
