import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { chatCompletionsError, SurfaceErrorFilter } from './http/api-error';
import { dashboardError } from './dashboard/dashboard.controller';
import { messagesError } from './surfaces/messages/messages.wire';
import { nativeError } from './surfaces/native/native.wire';

const messages = new SurfaceErrorFilter(messagesError);
const native = new SurfaceErrorFilter(nativeError);
const chatCompletions = new SurfaceErrorFilter(chatCompletionsError);
const dashboard = new SurfaceErrorFilter(dashboardError);

/**
 * Failures that happen before a route runs (a body that is not JSON, or too large) still answer
 * in the format of the surface the URL names.
 */
@Catch()
export class ErrorFormatByRoute implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const request = host.switchToHttp().getRequest<FastifyRequest>();
    const path = (request.url ?? '').split('?')[0];
    const filter =
      path === '/api/v1/messages'
        ? messages
        : path.startsWith('/dashboard/')
          ? dashboard
        : request.method === 'POST' && /^\/api\/v1\/models\/.+\/chat\/?$/.test(path)
          ? native
          : chatCompletions;
    filter.catch(exception, host);
  }
}
