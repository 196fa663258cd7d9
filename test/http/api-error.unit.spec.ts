import { DisconnectsClientError, RootNodesUnavailableError, SimpleError } from 'redis';
import { toApiError } from '../../src/http/api-error';

/** The error node-redis rejects its commands in flight with when Redis dies under them: the socket's own. */
const socketError = (code: string) => Object.assign(new Error(`read ${code}`), { code, errno: -104, syscall: 'read' });

describe('toApiError', () => {
  it.each(['ECONNRESET', 'EPIPE', 'ECONNREFUSED', 'ETIMEDOUT'])(
    'answers a store connection lost under a request in flight (%s) with 503, not 500',
    (code) => {
      const error = toApiError(socketError(code));
      expect(error.status).toBe(503);
      expect(error.code).toBe('unavailable');
    },
  );

  it.each([
    'CLUSTERDOWN The cluster is down',
    'TRYAGAIN Multiple keys request during rehashing of slot',
    'MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to no',
    'LOADING Redis is loading the dataset in memory',
    "READONLY You can't write against a read only replica.",
    'MOVED 8365 127.0.0.1:30002',
    'ASK 8365 127.0.0.1:30002',
  ])('answers a Redis Cluster mid-failover (%s) with 503, not 500', (reply) => {
    const error = toApiError(new SimpleError(reply));
    expect(error.status).toBe(503);
    expect(error.code).toBe('unavailable');
  });

  it.each([
    ['the cluster client dropping a node it no longer has (a failover)', new DisconnectsClientError()],
    ['the cluster client reaching none of its nodes', new RootNodesUnavailableError()],
  ])('answers %s with 503, not 500', (_what, thrown) => {
    const error = toApiError(thrown);
    expect(error.status).toBe(503);
    expect(error.code).toBe('unavailable');
  });

  it('still answers what it cannot name with 500 and no detail', () => {
    const error = toApiError(Object.assign(new Error('boom at /secret/path'), { code: 'EWHATEVER' }));
    expect(error.status).toBe(500);
    expect(error.message).toBe('internal error');
  });
});
