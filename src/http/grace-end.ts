import { RouteConfig } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ErrorFormat, replyWithError, shuttingDown } from './api-error';

/**
 * The end of the shutdown's grace period, for the routes whose use case does not end its own
 * requests (management and API reads and writes: keys, credits, the dashboard…): each request still
 * open then is answered a 503 in its route's error format, with Retry-After, instead of having its
 * connection cut. The routes whose use case ends its own requests (inference, embeddings, token
 * counts: they give up their host call, resolve their hold as `shutdown` and answer) say so in
 * their route's config, and are left to it.
 */

/** What this registers requests with: the pipeline's OpenRequests (inference/in-flight.ts), as seen from here. */
interface OpenRequests {
  /** Null once the grace period is over; else what forgets the request. */
  whileOpen(end: () => void): (() => void) | null;
}

/** Fastify route config of a route whose use case ends its own requests at the grace period's end (see OpenRequests). */
export const ENDS_ITS_OWN_REQUESTS = { endsItsOwnRequests: true } as const;

/** The Nest decorator marking such a route. */
export const EndsItsOwnRequests = () => RouteConfig(ENDS_ITS_OWN_REQUESTS);

/**
 * The 503 of a request of such a route: one that only reads may simply be sent again; one that
 * writes may have taken effect (its append may land as the gateway stops), and is to be checked first.
 */
export function endedAtGraceEnd(method: string) {
  const reads = method === 'GET' || method === 'HEAD';
  return shuttingDown(
    'the gateway is shutting down and this request was still running when its grace period ended: ' +
      (reads
        ? 'send it again (to another instance)'
        : 'it may or may not have taken effect; check before sending it again (to another instance)'),
  ).as('shutdown');
}

/**
 * Registers each request of a route that does not end its own (declared after this is called) with `open` (once it exists: the
 * application's), from its arrival until its response closes; at the grace period's end, one not
 * yet answered is answered the 503 in the format `formatOf` names for its URL. One whose answer has
 * begun (a download under way) cannot be: it is left to be cut. A request arriving after the grace
 * period (on a connection kept alive) is answered so at once.
 */
export function answerAtGraceEnd(
  fastify: FastifyInstance,
  open: () => OpenRequests | null,
  formatOf: (method: string, url: string) => ErrorFormat,
): void {
  const answer = (request: FastifyRequest, reply: FastifyReply) => {
    if (reply.sent || reply.raw.headersSent) return;
    replyWithError(reply, endedAtGraceEnd(request.method), formatOf(request.method, request.url ?? ''));
  };
  // Callback style: an async hook costs a promise on every request.
  const registered = (request: FastifyRequest, reply: FastifyReply, done: () => void) => {
    const requests = open();
    if (requests === null) return done();
    const forget = requests.whileOpen(() => answer(request, reply));
    if (forget === null) return answer(request, reply);
    reply.raw.once('close', forget);
    done();
  };
  // Given to each route as it is declared, but those that end their own: the hot routes run nothing of it.
  fastify.addHook('onRoute', (route) => {
    const config: { endsItsOwnRequests?: boolean } | undefined = route.config;
    if (config?.endsItsOwnRequests === true) return;
    const own = route.onRequest === undefined ? [] : Array.isArray(route.onRequest) ? route.onRequest : [route.onRequest];
    route.onRequest = [...own, registered];
  });
}
