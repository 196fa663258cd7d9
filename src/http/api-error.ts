import { ArgumentsHost, Catch, ExceptionFilter, HttpException } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { WrongExpectedRevisionError } from '../eventstore/event-store';
import { IdentityRuleError } from '../identity/identity-rule-error';
import { maskSecrets } from '../key-secret/key-secret';
import { connectionLost, REDIS_REPLY_ERRORS, REDIS_UNREACHABLE } from '../projections/store-errors';

/** The kinds of failure a caller can see, with their HTTP status. */
export const API_ERRORS = {
  invalid_request: { status: 400, type: 'invalid_request_error' },
  invalid_api_key: { status: 401, type: 'authentication_error' },
  insufficient_credits: { status: 402, type: 'insufficient_credits' },
  forbidden: { status: 403, type: 'permission_error' },
  // OpenAI's API answers every 404 (an unknown URL, an id it does not have) as invalid_request_error: it has no not_found_error.
  not_found: { status: 404, type: 'invalid_request_error' },
  // A model no configured host serves (unknown, or none of its hosts configured): OpenAI's own code and type for it.
  model_not_found: { status: 404, type: 'invalid_request_error' },
  // A method the path does not take, where the API spoken answers so (see error-formats.ts).
  method_not_allowed: { status: 405, type: 'invalid_request_error' },
  request_timeout: { status: 408, type: 'invalid_request_error' },
  conflict: { status: 409, type: 'invalid_request_error' },
  payload_too_large: { status: 413, type: 'invalid_request_error' },
  rate_limited: { status: 429, type: 'rate_limit_error' },
  headers_too_large: { status: 431, type: 'invalid_request_error' },
  provider_error: { status: 502, type: 'provider_error' },
  provider_timeout: { status: 504, type: 'provider_timeout' },
  internal_error: { status: 500, type: 'server_error' },
  unavailable: { status: 503, type: 'service_unavailable' },
} as const;

export type ApiErrorCode = keyof typeof API_ERRORS;

/**
 * A failure to report to the caller; each surface renders it in its own wire format. Its message
 * is masked here, once for every route: it often echoes what the client sent (a model, a path, a
 * field's name, a parser's excerpt of the body), and an error never carries a secret.
 */
export class ApiError extends Error {
  constructor(
    readonly code: ApiErrorCode,
    message: string,
    /** Extra fields for the error body (e.g. retryAfterSeconds). */
    readonly details: Record<string, unknown> = {},
    /** Headers the answer carries (e.g. Retry-After and a key's rate limits). */
    readonly headers?: Record<string, string>,
    /** What the logs, metrics and request log call it, when finer than its code (a key's limit, not the balance). */
    readonly outcome: string = code,
  ) {
    super(maskSecrets(message));
    this.name = 'ApiError';
  }

  /** The same error, logged and counted as `outcome`. */
  as(outcome: string): ApiError {
    return new ApiError(this.code, this.message, this.details, this.headers, outcome);
  }

  get status(): number {
    return API_ERRORS[this.code].status;
  }

  /** The same error, its answer carrying `headers` too (itself when there are none). */
  withHeaders(headers: Record<string, string> | undefined): ApiError {
    return headers === undefined
      ? this
      : new ApiError(this.code, this.message, this.details, { ...this.headers, ...headers }, this.outcome);
  }
}

/** What a client told the gateway is shutting down waits before sending again (to another instance, behind a load balancer). */
export const SHUTDOWN_RETRY_AFTER_SECONDS = 1;

/** The 503 of a gateway shutting down (`message`: what became of the request), with Retry-After. */
export const shuttingDown = (message: string): ApiError =>
  new ApiError('unavailable', message, {}, { 'retry-after': String(SHUTDOWN_RETRY_AFTER_SECONDS) });

/**
 * Nest says "Cannot GET /path?query": name the method and path so a wrong verb is obvious; not the
 * query (ApiError masks a key pasted into the path).
 */
function unknownRoute(message: string): string {
  const match = /^Cannot (\w+) ([^?\s]{1,200})/.exec(message);
  return match ? `no such route: ${match[1]} ${match[2]}` : 'no such route';
}

/**
 * Errors of the stores' clients that mean a store cannot be reached now — Redis offline or
 * reconnecting, a cluster's client dropping the connections to nodes no longer in the layout it
 * has just learnt (a failover: the commands in flight on them fail with DisconnectsClientError),
 * or reaching none of the nodes it knows (node-redis's classes) — answered 503:
 * the request may succeed in a moment, and nothing was held or billed.
 */
const STORE_UNAVAILABLE = REDIS_UNREACHABLE;

/**
 * Redis's own replies that mean "not now": a cluster without a master for some slots (a failover
 * under way), a slot moving (its redirection met by a command the client did not follow, a MULTI),
 * a master just demoted to replica refusing a write it was sent before the client learnt the new
 * layout (a planned failover), a replica still loading.
 */
const STORE_BUSY = /^(CLUSTERDOWN|TRYAGAIN|MASTERDOWN|LOADING|READONLY|MOVED|ASK) /;
const REPLY_ERRORS = REDIS_REPLY_ERRORS;

const storeUnavailable = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  (STORE_UNAVAILABLE.has(error.constructor.name) ||
    connectionLost(error) ||
    (REPLY_ERRORS.has(error.constructor.name) && STORE_BUSY.test((error as Error).message)));

/** The read models are gone (Redis emptied) or being rebuilt from the log: they cannot say whether a key or a balance exists. */
const readModelsRebuilding = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && error.constructor.name === 'ReadModelsLostError';

/** What a caller sees of a rule of identity their input broke (a blank name, a duplicate, a revoked key): never a 500. */
function identityRefusal(error: IdentityRuleError): ApiError {
  return new ApiError(IDENTITY_REFUSALS[error.code] ?? 'invalid_request', error.message);
}

const IDENTITY_REFUSALS: Partial<Record<IdentityRuleError['code'], ApiErrorCode>> = {
  organization_not_found: 'not_found',
  user_not_found: 'not_found',
  key_not_found: 'not_found',
  not_member: 'not_found',
  organization_exists: 'conflict',
  user_exists: 'conflict',
  key_exists: 'conflict',
  already_member: 'conflict',
  key_revoked: 'conflict',
  // A request made with an expired key: a 401, as any key that does not serve.
  key_expired: 'invalid_api_key',
  last_owner: 'conflict',
  not_owner: 'forbidden',
  not_key_manager: 'forbidden',
};

/** Maps anything thrown to an ApiError without leaking internals. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  if (error instanceof IdentityRuleError) return identityRefusal(error);
  if (error instanceof WrongExpectedRevisionError) {
    return new ApiError('conflict', 'changed by another request at the same moment: try again');
  }
  if (readModelsRebuilding(error)) {
    return new ApiError(
      'unavailable',
      "the gateway's balances and keys are being rebuilt from its event log; nothing was billed; try again",
    );
  }
  if (storeUnavailable(error)) {
    return new ApiError(
      'unavailable',
      'the gateway cannot reach its balance store (Redis) right now; nothing was billed; try again',
    );
  }
  // A body in a type no parser takes (a form, XML): from Fastify, or from Nest's adapter.
  const status = error instanceof HttpException ? error.getStatus() : (error as { statusCode?: number }).statusCode;
  if (status === 415) return new ApiError('invalid_request', 'the body must be JSON, sent with "content-type: application/json"');
  if (error instanceof HttpException) {
    const code = (Object.keys(API_ERRORS) as ApiErrorCode[]).find((c) => API_ERRORS[c].status === status);
    if (code) return new ApiError(code, status === 404 ? unknownRoute(error.message) : error.message);
  }
  if (status === 413) return new ApiError('payload_too_large', 'request body is too large');
  if (status === 400) return new ApiError('invalid_request', (error as Error).message);
  return new ApiError('internal_error', 'internal error');
}

/**
 * Renders an error in a surface's format. `requestId` is the request's (its x-request-id), for
 * formats whose body names it.
 */
export type ErrorFormat = (error: ApiError, requestId: string) => unknown;

/** The error each request was answered with (a refusal or a failure), for its log line. */
const TOLD = new WeakMap<object, ApiError>();

/** Remembers that `request` was answered with `error` (the first told wins: a stream's in-band error after its opening). */
export function tellError(request: object, error: ApiError): void {
  if (!TOLD.has(request)) TOLD.set(request, error);
}

/** The error `request` was answered with, if any. */
export const errorTold = (request: object): ApiError | undefined => TOLD.get(request);

/** Answers anything thrown with its status, in the error format `render` writes. */
export function replyWithError(reply: FastifyReply, exception: unknown, render: ErrorFormat): void {
  const error = toApiError(exception);
  tellError(reply.request, error);
  if (error.headers) void reply.headers(error.headers);
  void reply.status(error.status).send(render(error, reply.request.id));
}

/** Renders every failure of a surface's routes in that surface's error format. */
@Catch()
export class SurfaceErrorFilter implements ExceptionFilter {
  constructor(private readonly render: ErrorFormat) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    replyWithError(host.switchToHttp().getResponse<FastifyReply>(), exception, this.render);
  }
}

/**
 * OpenAI's error format, `{ error: { message, type, param, code } }` (its `Error` schema: `param`
 * names the field at fault, or is null): chat completions, Responses, embeddings, the model list,
 * and the default for /api/v1.
 */
export const chatCompletionsError = (error: ApiError) => ({
  error: {
    message: error.message,
    type: API_ERRORS[error.code].type,
    param: typeof error.details.param === 'string' ? error.details.param : null,
    code: error.code,
  },
});

/** The filter for routes answering in the chat-completions format (an instance: it takes no injection). */
export const chatCompletionsErrors = new SurfaceErrorFilter(chatCompletionsError);

/**
 * OpenRouter's error format, `{ error: { code, message } }` with the HTTP status as `code`: the
 * routes that are OpenRouter's own (credits, the calling key, generations).
 */
export const openRouterError = (error: ApiError) => ({ error: { code: error.status, message: error.message } });

export const openRouterErrors = new SurfaceErrorFilter(openRouterError);
