import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { chatCompletionsError, ErrorFormat, openRouterError, replyWithError } from './http/api-error';
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

/**
 * Failures that happen before a route runs (a body that is not JSON, or too large, a route
 * that does not exist) still answer in the format of the surface the URL names.
 */
@Catch()
export class ErrorFormatByRoute implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    replyWithError(host.switchToHttp().getResponse<FastifyReply>(), exception, errorFormatFor(request.method, request.url ?? ''));
  }
}
