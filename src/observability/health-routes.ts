import type { FastifyInstance } from 'fastify';
import { ApiError, replyWithError, shuttingDown } from '../http/api-error';
import type { ErrorFormatFor } from '../http/client-errors';
import { eventsBehind, type Lifecycle, READY_LAG_BOUND, readiness } from './health';
import { failureText } from '../projections/store-errors';

/** What readiness looks at: the event log (and whether it takes appends), how far the read models have applied it, and their store. */
export interface HealthSources {
  events: {
    headPosition(): Promise<number>;
    readAll(after: number, limit: number): Promise<unknown[]>;
    appendFailure(): Promise<Error | null>;
  };
  /** The log position the read models have applied. */
  applied: () => number;
  /** Resolves when the read models' store answers. */
  storeAnswers: () => Promise<unknown>;
  /** Hosts' circuits this instance has seen not closed (a detail: a failing host does not make the gateway unready). */
  circuits?: () => Promise<Array<{ host: string; model: string; phase: string; until?: string }>>;
  /** Why the log is not the one the read models describe, or null (see Projector.logReplaced). */
  logReplaced: () => string | null;
  /** Where the log stands for a request (see Projector.logStanding): checked first when in doubt. */
  logStanding: () => LogStanding | Promise<LogStanding | 'unchecked'>;
  /** Why this instance admits nothing now (its serving claim in the log lapsed or was lost), or null (see Runtime.servingRefusal). */
  servingRefusal?: () => string | null;
}

const SHUTTING_DOWN = shuttingDown('the gateway is shutting down: send the request again (to another instance)');

/** Said to callers without the log's identities (the operator finds them in the service's log and in /health/ready). */
const LOG_REPLACED = new ApiError(
  'unavailable',
  "the gateway's event log is not the log its balances were read from (emptied or replaced): nothing is admitted until an operator acts",
);

/** Said to callers without the claims' details (the operator finds them in the service's log and in /health/ready). */
const CLAIM_LAPSED = new ApiError(
  'unavailable',
  'this gateway instance cannot renew its claim on its balances in the event log, so it admits nothing: send the request again (to another instance)',
);

const LOG_UNCHECKED = new ApiError(
  'unavailable',
  "the gateway's event log cannot be checked since its connection failed: send the request again shortly",
);

/** Where the log stands, once known without asking it. */
type LogStanding = 'same' | 'replaced';

const isHealthRoute = (url: string) => url === '/health' || url.startsWith('/health/');

/**
 * GET /health (serving), /health/live (the process answers) and /health/ready (ready to serve, or
 * why not); and, once draining, every other request answered 503 in its surface's format.
 */
export function serveHealth(
  fastify: FastifyInstance,
  sources: HealthSources,
  lifecycle: Lifecycle,
  formatFor: ErrorFormatFor,
): void {
  fastify.get('/health', (_request, reply) => void reply.send({ status: 'ok' }));
  fastify.get('/health/live', (_request, reply) => void reply.send({ status: 'live' }));
  fastify.get('/health/ready', async (_request, reply) => {
    const [behind, appends, store] = await Promise.all([
      eventsBehind(sources.events, sources.applied(), READY_LAG_BOUND + 1).catch((error: Error) => error),
      // After an append failed for a reason of the log, this tries a write of its own: ready again once there is room.
      sources.events.appendFailure().catch((error: Error) => error),
      sources.storeAnswers().then(
        () => null,
        // Named as Redis's when it is ("The client is offline" alone names no store).
        (error: Error) => new Error(failureText(error)),
      ),
    ]);
    const state = readiness({
      draining: lifecycle.draining || lifecycle.leaving === true,
      behind,
      appends,
      store,
      logReplaced: sources.logReplaced(),
      starting: lifecycle.starting,
      servingClaim: sources.servingRefusal?.() ?? null,
    });
    // Shown once there are any: the body is as before while every host is well.
    const circuits = (await sources.circuits?.()) ?? [];
    return reply.code(state.ready ? 200 : 503).send(circuits.length === 0 ? state : { ...state, circuits });
  });
  // Shutting down: a request on a connection kept alive is answered at once, in its surface's
  // format, and the connection closed; the health routes still say how the service is. On a log
  // that is not the read models' every request is answered 503 the same way, before its key is
  // looked up: neither a key nor a balance can be proven (a key of the new log would be a wrongful 401).
  // While the log is in doubt (its subscription failed, not yet checked) the check is made first.
  fastify.addHook('onRequest', (request, reply, done) => {
    if (isHealthRoute(request.url)) return done();
    const format = () => formatFor(request.method, request.url);
    if (lifecycle.draining) {
      void reply.header('connection', 'close');
      return replyWithError(reply, SHUTTING_DOWN, format());
    }
    // Its claim on its balances lapsed (the log takes no renewal) or lost: another instance, of
    // another store, may be admitting on the same credit. Known without I/O.
    if (sources.servingRefusal?.()) return replyWithError(reply, CLAIM_LAPSED, format());
    // Known at once on every request but those made while the log is in doubt: no promise per request.
    const standing = sources.logStanding();
    if (standing === 'same') return done();
    if (standing === 'replaced') return replyWithError(reply, LOG_REPLACED, format());
    void standing.then((checked) =>
      checked === 'same' ? done() : replyWithError(reply, checked === 'replaced' ? LOG_REPLACED : LOG_UNCHECKED, format()),
    );
  });
}
