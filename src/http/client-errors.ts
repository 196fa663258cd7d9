import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { ApiError, ErrorFormat, toApiError } from './api-error';

/** Renders an error in the format of the surface a method and URL name. */
export type ErrorFormatFor = (method: string, url: string) => ErrorFormat;

/**
 * The reply each connection is receiving or answering, kept on the connection itself, for an
 * error Node raises on the connection: a property set and cleared per request, where a WeakMap
 * entry and a record per request cost allocations and the collector's ephemeron work.
 */
const IN_FLIGHT = Symbol('inFlight');

type TrackedSocket = Socket & { [IN_FLIGHT]?: FastifyReply | undefined };

/** The method and URL of a request line at the start of what Node could not parse, if any. */
function requestLineOf(raw: unknown): { method: string; url: string } | null {
  if (!Buffer.isBuffer(raw)) return null;
  const match = /^([A-Z]{1,16}) (\S{1,2048}) HTTP\//.exec(raw.subarray(0, 2100).toString('latin1'));
  return match ? { method: match[1], url: match[2] } : null;
}

function connectionError(error: { code?: string }): ApiError {
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT')
    return new ApiError('request_timeout', 'the request was not received in time: its headers or body stopped arriving');
  if (error.code === 'HPE_HEADER_OVERFLOW') return new ApiError('headers_too_large', 'the request headers are too large');
  return new ApiError('invalid_request', 'the request is not valid HTTP');
}

/** Remembers which request each connection is on, for connectionErrorHandler. */
export function trackRequestsOnConnections(fastify: FastifyInstance): void {
  fastify.addHook('onRequest', (request, reply, done) => {
    (request.raw.socket as TrackedSocket)[IN_FLIGHT] = reply;
    done();
  });
  fastify.addHook('onResponse', (request, _reply, done) => {
    (request.raw.socket as TrackedSocket)[IN_FLIGHT] = undefined;
    done();
  });
}

/**
 * Answers what Node itself would answer on a connection (a request that is not HTTP, headers too
 * large, a request that stops arriving: 400, 431, 408) as every other answer is: with an
 * `x-request-id` and in the error format of the surface the request names, then closes it.
 * Fastify's `clientErrorHandler`; the request is known once trackRequestsOnConnections runs.
 */
export function connectionErrorHandler(newRequestId: () => string, formatFor: ErrorFormatFor) {
  return (error: Error & { code?: string; rawPacket?: unknown }, socket: Socket): void => {
    if (error.code === 'ECONNRESET' || socket.destroyed) return;
    const current = (socket as TrackedSocket)[IN_FLIGHT];
    (socket as TrackedSocket)[IN_FLIGHT] = undefined;
    // An answer already under way cannot be replaced: the connection is only closed.
    if (socket.writable && !current?.raw.headersSent) {
      const named = current?.request ?? requestLineOf(error.rawPacket) ?? { method: 'GET', url: '/' };
      const apiError = toApiError(connectionError(error));
      const id = current?.request.id ?? newRequestId();
      const body = JSON.stringify(formatFor(named.method, named.url)(apiError, id));
      socket.write(
        `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\n` +
          `x-request-id: ${id}\r\n` +
          'content-type: application/json; charset=utf-8\r\n' +
          `content-length: ${Buffer.byteLength(body)}\r\n` +
          'connection: close\r\n\r\n' +
          body,
      );
    }
    socket.destroy(error);
  };
}
