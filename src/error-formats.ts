import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError, chatCompletionsError, ErrorFormat, openRouterError, replyWithError } from './http/api-error';
import { dashboardError } from './dashboard/dashboard-error';
import { geminiError } from './surfaces/gemini/gemini.wire';
import { messagesError } from './surfaces/messages/messages.wire';
import { nativeError } from './surfaces/native/native.wire';
import { responsesError } from './surfaces/responses/responses.wire';

/** The routes that are OpenRouter's own, answering errors in its format. */
const OPENROUTER_ROUTES = new Set(['/api/v1/credits', '/api/v1/key', '/api/v1/generation']);

/** The error format of the surface a request's URL names; chat-completions for the rest of /api/v1. */
export function errorFormatFor(method: string, url: string): ErrorFormat {
  const path = url.split('?')[0];
  if (OPENROUTER_ROUTES.has(path)) return openRouterError;
  if (path.startsWith('/api/v1/messages')) return messagesError;
  if (path === '/api/v1/responses' || path.startsWith('/api/v1/responses/')) return responsesError;
  if (path.startsWith('/api/v1beta/')) return geminiError;
  if (path.startsWith('/dashboard/')) return dashboardError;
  // GET /api/v1/models/{slug} is the model list's; a slug may itself end in "/chat".
  if (method === 'POST' && /^\/api\/v1\/models\/.+\/chat\/?$/.test(path)) return nativeError;
  return chatCompletionsError;
}

/** The methods a path may be routed for, in the order an Allow header lists them. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * The formats whose API answers a method its path does not take with 405 and an Allow header:
 * Anthropic's (GET /v1/messages is `405 {"type":"error","error":{"type":"invalid_request_error",
 * "message":"Method Not Allowed"}}`). OpenAI's API answers it as any unknown URL, 404 `Invalid URL
 * (GET /v1/chat/completions)`, and Google's 404 NOT_FOUND: their formats (and OpenRouter's, and
 * ours) answer 404, naming the methods the path takes.
 */
const ANSWERS_405 = new Set<ErrorFormat>([messagesError]);

/**
 * A request routed nowhere (Fastify's 404) whose path another method serves: the 405 or the 404
 * that says so in its format's way; null when no method serves the path.
 */
function wrongMethod(request: FastifyRequest, format: ErrorFormat): ApiError | null {
  const path = (request.url ?? '').split('?')[0];
  const taken = METHODS.filter((m) => m !== request.method && request.server.findRoute({ method: m, url: path }) !== null);
  if (taken.length === 0) return null;
  // As Nest names an unknown route (api-error.ts): the method and the path, bounded, never the query.
  const route = `${request.method} ${path.slice(0, 200)}`;
  const methods = taken.join(', ');
  return ANSWERS_405.has(format)
    ? new ApiError('method_not_allowed', `method not allowed: ${route} (the path takes ${methods})`, {}, { allow: methods })
    : new ApiError('not_found', `no such route: ${route} (the path takes ${methods})`);
}

/**
 * Failures that happen before a route runs (a body that is not JSON, or too large, a route
 * that does not exist, a method its path does not take) still answer in the format of the
 * surface the URL names.
 */
@Catch()
export class ErrorFormatByRoute implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const format = errorFormatFor(request.method, request.url ?? '');
    const answer = (request.is404 && wrongMethod(request, format)) || exception;
    replyWithError(host.switchToHttp().getResponse<FastifyReply>(), answer, format);
  }
}
