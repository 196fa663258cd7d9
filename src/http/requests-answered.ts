import type { FastifyInstance } from 'fastify';

/**
 * How many HTTP requests this process is answering: each from its arrival until its response
 * closes (sent, or its connection gone, whichever way it ended). The SQLite log asks it whether a
 * request is alone (see SqliteEventStoreOptions.commitAloneHere).
 */
export class RequestsAnswered {
  private count = 0;
  // One function for every response: a closure per request would be an allocation per request.
  private readonly closed = (): void => {
    this.count -= 1;
  };

  get now(): number {
    return this.count;
  }

  /** Counts the requests `fastify` answers. */
  track(fastify: FastifyInstance): void {
    // Callback style: an async hook costs a promise on every request.
    fastify.addHook('onRequest', (_request, reply, done) => {
      this.count += 1;
      reply.raw.once('close', this.closed);
      done();
    });
  }
}
