import type { createClient, createCluster } from 'redis';

/** A connection to one Redis (`REDIS_URL`) or to a Redis Cluster (`REDIS_CLUSTER=true`). */
export type RedisClient = ReturnType<typeof createClient> | ReturnType<typeof createCluster>;
export type RedisClusterClient = ReturnType<typeof createCluster>;
/** One server's connection: the client of a single Redis, or of one node of a cluster. */
export type RedisNodeClient = ReturnType<typeof createClient>;

/** Where Redis is: `url` names one server, or, for a cluster, one or more of its nodes, comma-separated. */
export interface RedisTarget {
  url: string;
  cluster: boolean;
}

export const isCluster = (client: RedisClient): client is RedisClusterClient => 'masters' in client;

/** `REDIS_URL` as it may be shown: every password in it (one per node of a cluster) masked. */
export function maskedRedisUrl(url: string): string {
  return url
    .split(',')
    .map((node) => {
      try {
        const parsed = new URL(node.trim());
        if (parsed.password) parsed.password = '***';
        return parsed.toString();
      } catch {
        return node.replace(/\/\/[^@/]*@/, '//***@');
      }
    })
    .join(',');
}

/** What the start is told when Redis cannot be reached within its bound. */
export class RedisUnreachableError extends Error {
  /** `timeoutMs`: the bound that ran out; null when the client gave up first (a cluster none of whose nodes answer). */
  constructor(url: string, timeoutMs: number | null, cause: string | null) {
    super(
      `Redis at ${maskedRedisUrl(url)} could not be reached${timeoutMs === null ? '' : ` within ${timeoutMs} ms`}` +
        `${cause ? ` (${cause})` : ''}: check REDIS_URL and that Redis is running ` +
        '(REDIS_CONNECT_TIMEOUT_MS bounds this wait)',
    );
    this.name = 'RedisUnreachableError';
  }
}

export interface ConnectOptions {
  /** Hears each time a server is connected again after being lost (what it holds may have changed meanwhile). */
  onReconnect?: () => void;
  /** How long the first connection may take before the start gives up (RedisUnreachableError). */
  timeoutMs?: number;
  /** Where the start's failed attempts are told (the URL masked). */
  log?: (line: string) => void;
}

/** The default bound on the first connection (`REDIS_CONNECT_TIMEOUT_MS`). */
export const REDIS_CONNECT_TIMEOUT_MS = 10_000;

/** A message with every password of `url` masked (a client's error may quote the address it was given). */
function scrubbed(message: string, url: string): string {
  let out = message;
  for (const node of url.split(',')) {
    try {
      const { password } = new URL(node.trim());
      if (password) out = out.split(password).join('***').split(decodeURIComponent(password)).join('***');
    } catch {
      // Not a URL: config validation refused it before this.
    }
  }
  return out;
}

/**
 * The one place the service's Redis connection is made (every Redis-backed feature uses the client
 * this returns). While Redis, or a cluster node, is away, commands fail at once (a 503 for the
 * request) instead of waiting in a queue with no limit; reconnection goes on in the background.
 *
 * The first connection is bounded: each failed attempt is logged once (its cause, the URL's password
 * masked), and past `timeoutMs` the client is dropped and RedisUnreachableError thrown, so a start
 * against a Redis that is not there ends (exit 1) instead of hanging in silence.
 */
export async function connectRedis(target: RedisTarget, options: ConnectOptions = {}): Promise<RedisClient> {
  const onReconnect = options.onReconnect ?? (() => {});
  const timeoutMs = options.timeoutMs ?? REDIS_CONNECT_TIMEOUT_MS;
  const log = options.log ?? (() => {});
  // Loaded here, not at start: a gateway without REDIS_URL never needs the client (4 MB of heap).
  const { createClient, createCluster } = await import('redis');
  const settings = {
    disableOfflineQueue: true,
    socket: { connectTimeout: Math.min(2_000, timeoutMs), reconnectStrategy: (retries: number) => Math.min(retries * 100, 2000) },
  };
  const client: RedisClient = target.cluster
    ? createCluster({ rootNodes: target.url.split(',').map((url) => ({ url: url.trim() })), defaults: settings })
    : createClient({ url: target.url, ...settings });
  // After start: reconnection is automatic; commands issued meanwhile fail and callers report that
  // (on a cluster, a topology query that failed: the next one, on the next node error, tries again).
  client.on('error', () => undefined);
  let lastCause: string | null = null;
  const starting = (error: Error) => {
    const cause = scrubbed(error.message || error.name, target.url);
    if (cause !== lastCause)
      log(`cannot reach Redis at ${maskedRedisUrl(target.url)} (${cause}): trying again for up to ${timeoutMs} ms`);
    lastCause = cause;
  };
  client.on('error', starting);
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new RedisUnreachableError(target.url, timeoutMs, lastCause)), timeoutMs);
  });
  try {
    await Promise.race([client.connect(), gaveUp]);
  } catch (error) {
    try {
      client.destroy();
    } catch {
      // Never connected: nothing to let go.
    }
    if (error instanceof RedisUnreachableError) throw error;
    throw new RedisUnreachableError(target.url, null, scrubbed((error as Error).message, target.url));
  } finally {
    clearTimeout(timer);
    client.off('error', starting);
  }
  if (isCluster(client)) followFailovers(client, onReconnect);
  else client.on('ready', onReconnect);
  return client;
}

/**
 * node-redis learns a cluster's topology again only when a node answers MOVED: a master that stops
 * answering leaves its slots' commands failing on its dead connection, even after a replica took
 * its place. So each time a node's connection fails, the topology is asked again (of a node still
 * up, else of the root nodes), one query at a time, until the dead node is no longer a master.
 */
function followFailovers(cluster: RedisClusterClient, onReconnect: () => void): void {
  let asking = false;
  cluster.on('node-error', (_error: unknown, failed: { host: string; port: number }) => {
    onReconnect();
    if (asking || !cluster.isOpen) return;
    asking = true;
    const up = cluster.masters.find((node) => node.client?.isReady && !(node.host === failed.host && node.port === failed.port));
    const startWith = up?.client ?? cluster.masters.find((node) => node.client)?.client;
    const ask = startWith ? cluster._slots.rediscover(startWith) : Promise.resolve();
    void ask.catch(() => undefined).finally(() => (asking = false));
  });
}

/** Each master's connection (one, for a single Redis): for what spans the whole keyspace (SCAN, SCRIPT FLUSH). */
export async function masters(client: RedisClient): Promise<RedisNodeClient[]> {
  if (!isCluster(client)) return [client];
  return Promise.all(client.masters.map((node) => client.nodeClient(node)));
}

/** The keys matching `pattern`, in batches, from every master. */
export async function* scanKeys(client: RedisClient, pattern: string, count = 1000): AsyncGenerator<string[]> {
  for (const node of await masters(client)) yield* node.scanIterator({ MATCH: pattern, COUNT: count });
}

/** A set's members, in batches (SSCAN: a cluster client has no iterator of its own). */
export async function* setMembers(client: RedisClient, key: string, count = 500): AsyncGenerator<string[]> {
  let cursor = '0';
  do {
    const reply = await client.sScan(key, cursor, { COUNT: count });
    cursor = String(reply.cursor);
    if (reply.members.length > 0) yield reply.members;
  } while (cursor !== '0');
}
