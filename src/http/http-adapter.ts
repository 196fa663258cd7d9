import { randomUUID } from 'node:crypto';
import { FastifyAdapter } from '@nestjs/platform-fastify';
import { LogController, type FastifyError, type FastifyReply, type FastifyRequest } from 'fastify';
import { maskSecrets } from '../key-secret/key-secret';
import { ApiError, replyWithError } from './api-error';
import { connectionErrorHandler, trackRequestsOnConnections, type ErrorFormatFor } from './client-errors';
import { boundJsonDepth } from './json-body';

export interface HttpSettings {
  bodyLimitBytes: number;
  requestReadTimeoutMs: number;
}

/**
 * Where and how the service listens. The backlog holds the connections the kernel has accepted
 * before the event loop takes them: Node's default, 511, overflowed when a thousand clients
 * connected at once to a busy process, and the connections past it were reset (ECONNRESET)
 * instead of waiting their turn. Linux caps it at net.core.somaxconn (4096 by default).
 */
export const listenOn = (port: number, host: string) => ({ port, host, backlog: 4096 });

const newRequestId = () => `req_${randomUUID().replace(/-/g, '')}`;

/**
 * Names an answer with its request's id: `x-request-id`, and on the messages surface `request-id`
 * too, the header Anthropic's API sends and its SDKs read (a message's `_request_id`, an error's
 * `requestID`).
 */
function nameAnswer(request: FastifyRequest, reply: FastifyReply): void {
  void reply.header('x-request-id', request.id);
  if (request.url.startsWith('/api/v1/messages')) void reply.header('request-id', request.id);
}

/**
 * The HTTP server as the service runs it: its limits and timeouts, a request id on every answer,
 * and the failures Fastify and Node answer themselves (a bad URL, a body too deep, a connection
 * that is not HTTP) answered in the format of the surface the request names.
 */
export function httpAdapter(
  settings: HttpSettings,
  logger: Record<string, unknown> | false,
  formatFor: ErrorFormatFor,
): FastifyAdapter {
  const adapter = new FastifyAdapter({
    logger,
    // One line per request, written when it ends (observability), instead of Fastify's two.
    logController: new LogController({ disableRequestLogging: true, requestIdLogLabel: 'requestId' }),
    // While draining, the health hook answers (in the surface's format) instead of Fastify's plain 503.
    return503OnClosing: false,
    // No Nest middleware here: without middie, no middleware walk on every request.
    skipMiddie: true,
    bodyLimit: settings.bodyLimitBytes,
    // Receiving the request (headers and body) has its own, short limit: a client that stops
    // sending mid-body is answered 408 and cut off, rather than held for the answer's 10 minutes.
    requestTimeout: settings.requestReadTimeoutMs,
    http: {
      headersTimeout: Math.min(60_000, settings.requestReadTimeoutMs),
      // How often Node looks for requests past those limits (its default, 30 s, would add up to that much).
      connectionsCheckingInterval: Math.min(5_000, Math.ceil(settings.requestReadTimeoutMs / 2)),
    },
    // A URL that cannot be decoded (a bad percent-encoding) is refused in the format of the surface it names.
    frameworkErrors: (error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
      // Raised while routing, before the onRequest hook that names every answer.
      nameAnswer(request, reply);
      const message = error.code === 'FST_ERR_BAD_URL' ? 'the URL is not valid (a malformed percent-encoding)' : error.message;
      replyWithError(reply, new ApiError('invalid_request', message), formatFor(request.method, request.url));
    },
    // What Node would answer itself (400, 408, 431) answers with an id, in the surface's format.
    clientErrorHandler: connectionErrorHandler(newRequestId, formatFor),
    genReqId: (request: { headers: Record<string, string | string[] | undefined> }) => {
      const given = request.headers['x-request-id'];
      // A client's id is kept (and recorded), unless it holds a secret.
      const usable = typeof given === 'string' && /^[\w.:-]{1,128}$/.test(given) && maskSecrets(given) === given;
      return usable ? given : newRequestId();
    },
  });
  const fastify = adapter.getInstance();
  // Bodies nested past a bound are a 400 before anything recursive reads them.
  boundJsonDepth(fastify);
  // Every body is JSON: JSON sent as text/plain is refused as any other type is (415, saying to send
  // it as application/json), not read as a string and then refused as "not a JSON object".
  fastify.removeContentTypeParser('text/plain');
  trackRequestsOnConnections(fastify);
  // Callback style: an async hook costs a promise on every request.
  fastify.addHook('onRequest', (request, reply, done) => {
    nameAnswer(request, reply);
    done();
  });
  return adapter;
}
