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

const isRedisError = (error: unknown): boolean =>
  typeof error === 'object' &&
  error !== null &&
  (REDIS_UNREACHABLE.has(error.constructor.name) || REDIS_REPLY_ERRORS.has(error.constructor.name));

/**
 * An error's message for the operator's log, saying that it is Redis's when it is ("The client is
 * offline" alone names no store).
 */
export const failureText = (error: unknown): string => {
  const message = error instanceof Error ? error.message : String(error);
  return isRedisError(error) ? `Redis: ${message}` : message;
};
