import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorFormat, replyWithError } from '../http/api-error';
import { ENDS_ITS_OWN_REQUESTS } from '../http/grace-end';

/** What a hot route does with its request: checks, translation, the inference command, the reply. */
export type RouteHandling = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * A hot inference route served by Fastify itself, not through Nest's router: no execution
 * context, pipe, guard, filter or observable per request. Its checks run as plain calls in the
 * order Nest ran them (headers, then the body), and any failure is answered in the surface's
 * error format, as its filter answered it. Failures before the handler (a body that is not JSON,
 * too large) still reach the global filter through Fastify's error handler, as before.
 */
export function serveDirectly(fastify: FastifyInstance, url: string, format: ErrorFormat, handle: RouteHandling): void {
  // Every such route is inference's, which ends its own requests at the shutdown's grace period's end.
  fastify.post(url, { config: ENDS_ITS_OWN_REQUESTS }, (request, reply) =>
    handle(request, reply).catch((error: unknown) => replyWithError(reply, error, format)),
  );
}
