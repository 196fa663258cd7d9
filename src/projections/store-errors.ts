/**
 * node-redis's errors that mean Redis cannot be reached now — offline or reconnecting, a cluster's
 * client dropping the connections to nodes no longer in its layout (a failover), or reaching none
 * of the nodes it knows.
 */
export const REDIS_UNREACHABLE = new Set([
  'ClientOfflineError',
  'DisconnectsClientError',
  'RootNodesUnavailableError',
  'ClientClosedError',
  'ConnectionTimeoutError',
  'SocketClosedUnexpectedlyError',
  'SocketTimeoutError',
  'ReconnectStrategyError',
]);

/** node-redis's classes of an error Redis replied. */
export const REDIS_REPLY_ERRORS = new Set(['ErrorReply', 'SimpleError', 'BlobError']);

/**
 * A store's socket that failed under a command in flight (Redis killed: node-redis rejects the
 * commands waiting for a reply with the socket's own error). Only the read models' client meets a
 * raw socket error in a store's call: EventStoreDB's client wraps its own, and hosts' sockets are
 * the transport's, which turns their errors into HostErrors.
 */
export const CONNECTION_LOST = new Set(['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH']);

export const connectionLost = (error: unknown): boolean =>
  typeof error === 'object' && error !== null && CONNECTION_LOST.has(String((error as { code?: unknown }).code));

const isRedisError = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  (REDIS_UNREACHABLE.has(error.constructor.name) || REDIS_REPLY_ERRORS.has(error.constructor.name) || connectionLost(error));

/**
 * An error's message for the operator's log, saying that it is Redis's when it is ("The client is
 * offline" or "read ECONNRESET" alone names no store). The message is read as a field: a socket's
 * error may come from another realm than this module's Error.
 */
export const failureText = (error: unknown): string => {
  const message = typeof (error as { message?: unknown })?.message === 'string' ? (error as Error).message : String(error);
  return isRedisError(error) ? `Redis: ${message}` : message;
};
