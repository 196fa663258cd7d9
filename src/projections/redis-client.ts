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

/**
 * The one place the service's Redis connection is made (every Redis-backed feature uses the client
 * this returns). While Redis, or a cluster node, is away, commands fail at once (a 503 for the
 * request) instead of waiting in a queue with no limit; reconnection goes on in the background.
 * `onReconnect` hears each time a server is connected again after being lost (what it holds may have
 * changed meanwhile).
 */
export async function connectRedis(target: RedisTarget, onReconnect: () => void = () => {}): Promise<RedisClient> {
  // Loaded here, not at start: a gateway without REDIS_URL never needs the client (4 MB of heap).
  const { createClient, createCluster } = await import('redis');
  const options = {
    disableOfflineQueue: true,
    socket: { connectTimeout: 2_000, reconnectStrategy: (retries: number) => Math.min(retries * 100, 2000) },
  };
  if (!target.cluster) {
    const client = createClient({ url: target.url, ...options });
    client.on('error', () => {
      // Reconnection is automatic; commands issued meanwhile fail and callers report that.
    });
    await client.connect();
    client.on('ready', onReconnect);
    return client;
  }
  const cluster = createCluster({
    rootNodes: target.url.split(',').map((url) => ({ url: url.trim() })),
    defaults: options,
  });
  cluster.on('error', () => {
    // A topology query that failed: the next one (on the next node error) tries again.
  });
  await cluster.connect();
  followFailovers(cluster, onReconnect);
  return cluster;
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
