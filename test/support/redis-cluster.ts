import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createClient } from 'redis';
import type { RedisTarget } from '../../src/projections/redis-client';
import { freePort } from './own-redis';
import { eventually } from './processes';
import { tempDir } from './temp';

/**
 * A real Redis Cluster for a test file: three masters with one replica each, six `redis-server`
 * processes in cluster mode on free ports, joined with CLUSTER commands (MEET, ADDSLOTS, REPLICATE:
 * what `redis-cli --cluster create` sends, without needing redis-cli), stopped and removed after.
 */

const SLOTS = 16_384;
const MASTERS = 3;

type NodeClient = ReturnType<typeof createClient>;

interface ClusterNode {
  port: number;
  id: string;
  process: ChildProcess;
  client: NodeClient;
  running: boolean;
}

export interface RedisCluster {
  /** What REDIS_URL names: every node, comma-separated. */
  url: string;
  target: RedisTarget;
  /** The environment a gateway uses to reach it. */
  env: Record<string, string>;
  /** The port of the master that holds `key`'s slot now. */
  masterOf(key: string): Promise<number>;
  /** A planned failover: the replica of the master on `port` takes over (CLUSTER FAILOVER), then the old master is stopped. */
  failOver(port: number): Promise<number>;
  /** An unplanned one: the master on `port` is killed; resolves with its replica's port once it is promoted and the cluster is whole. */
  killMaster(port: number): Promise<number>;
  /** killMaster in two steps: resolves once the master on `port` is dead, with its replica's promotion still to come (`promoted`, as killMaster). */
  crashMaster(port: number): Promise<{ promoted: Promise<number> }>;
  stop(): Promise<void>;
}

export const hasRedisServer = (): boolean => {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
};

/** `describe`, or `describe.skip` when redis-server is not installed (never under CI: there it must be). */
export const describeWithRedisCluster = (name: string, fn: () => void) =>
  (hasRedisServer() || process.env.CI === 'true' ? describe : describe.skip)(`${name} [Redis Cluster]`, fn);

/** A cluster node's own view: `cluster_state:ok` and the like. */
const clusterInfo = async (client: NodeClient): Promise<Record<string, string>> =>
  Object.fromEntries(
    (await client.clusterInfo())
      .split('\r\n')
      .filter((line) => line.includes(':'))
      .map((line) => line.split(':') as [string, string]),
  );

/** `CLUSTER NODES` as id → flags and the master it replicates ('-' for a master). */
async function nodesSeenBy(client: NodeClient): Promise<Map<string, { port: number; flags: string[]; master: string }>> {
  const text = await client.clusterNodes();
  return new Map(
    text
      .trim()
      .split('\n')
      .map((line) => {
        const [id, address, flags, master] = line.split(' ');
        return [id, { port: Number(address.split(':')[1].split('@')[0]), flags: flags.split(','), master }] as const;
      }),
  );
}

async function startNode(dir: string): Promise<Omit<ClusterNode, 'id'>> {
  const port = await freePort();
  const child = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--dir',
      dir,
      '--cluster-enabled',
      'yes',
      '--cluster-config-file',
      `nodes-${port}.conf`,
      // A dead master is noticed, and its replica elected, within a few seconds.
      '--cluster-node-timeout',
      '1000',
      // A replica's first sync starts at once: Redis's default waits 5 s for more replicas to share
      // it, and the cluster is whole only once every replica has synced (6 s a start instead of 2).
      '--repl-diskless-sync-delay',
      '0',
      '--save',
      '',
      '--appendonly',
      'no',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Ready to accept connections')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`redis-server on ${port} exited (${code}): ${output}`)));
  });
  child.stdout.removeAllListeners('data');
  child.stdout.resume();
  child.stderr.resume();
  const client = createClient({ url: `redis://127.0.0.1:${port}`, socket: { reconnectStrategy: false } });
  client.on('error', () => {});
  await client.connect();
  return { port, process: child, client, running: true };
}

export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = tempDir('redis-cluster');
  const started = await Promise.allSettled(Array.from({ length: MASTERS * 2 }, () => startNode(dir.path)));
  const nodes: ClusterNode[] = [];
  for (const result of started) if (result.status === 'fulfilled') nodes.push({ ...result.value, id: '' });
  const stop = async () => {
    await Promise.all(
      nodes.map(async (node) => {
        if (node.client.isOpen) node.client.destroy();
        if (node.running) {
          node.process.kill('SIGKILL');
          await once(node.process, 'exit');
          node.running = false;
        }
      }),
    );
    dir.cleanup();
  };
  try {
    if (nodes.length < started.length) throw (started.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason;
    for (const node of nodes) node.id = await node.client.clusterMyId();
    const masters = nodes.slice(0, MASTERS);
    await Promise.all(
      masters.map((master, i) => {
        const from = Math.floor((SLOTS * i) / MASTERS);
        const to = Math.floor((SLOTS * (i + 1)) / MASTERS);
        const slots = Array.from({ length: to - from }, (_, n) => String(from + n));
        return master.client.sendCommand(['CLUSTER', 'ADDSLOTS', ...slots]);
      }),
    );
    for (const node of nodes.slice(1)) await nodes[0].client.sendCommand(['CLUSTER', 'MEET', '127.0.0.1', String(node.port)]);
    // Every node knows every other (no handshake left) before a replica names its master.
    await eventually(async () => {
      for (const node of nodes) {
        const seen = await nodesSeenBy(node.client);
        if (seen.size !== nodes.length || [...seen.values()].some((n) => n.flags.includes('handshake'))) return false;
      }
      return true;
    }, 20_000);
    await Promise.all(
      nodes.slice(MASTERS).map((replica, i) => replica.client.sendCommand(['CLUSTER', 'REPLICATE', masters[i].id])),
    );
    await whole(nodes);
  } catch (error) {
    await stop();
    throw error;
  }

  const byPort = (port: number) => {
    const node = nodes.find((n) => n.port === port);
    if (!node) throw new Error(`no cluster node on ${port}`);
    return node;
  };
  /** The replica of the master on `port`, as that master's peers see it. */
  const replicaOf = async (port: number) => {
    const master = byPort(port);
    const seen = await nodesSeenBy(nodes.find((n) => n.running && n !== master)!.client);
    const [id] = [...seen].find(([, n]) => n.master === master.id) ?? [];
    const replica = nodes.find((n) => n.id === id);
    if (!replica) throw new Error(`the master on ${port} has no replica`);
    return replica;
  };
  const crashMaster = async (port: number) => {
    const replica = await replicaOf(port);
    const old = byPort(port);
    old.client.destroy();
    old.process.kill('SIGKILL');
    await once(old.process, 'exit');
    old.running = false;
    const promoted = (async () => {
      await eventually(async () => (await nodesSeenBy(replica.client)).get(replica.id)!.flags.includes('master'), 30_000, 50);
      await whole(nodes);
      return replica.port;
    })();
    // Awaited by the caller; a failure meanwhile is not unhandled.
    promoted.catch(() => undefined);
    return { promoted };
  };
  const url = nodes.map((n) => `redis://127.0.0.1:${n.port}`).join(',');
  return {
    url,
    target: { url, cluster: true },
    env: { REDIS_URL: url, REDIS_CLUSTER: 'true' },
    async masterOf(key) {
      const any = nodes.find((n) => n.running)!;
      const slot = await any.client.clusterKeySlot(key);
      const owner = (await any.client.clusterSlots()).find(({ from, to }) => slot >= from && slot <= to);
      if (!owner) throw new Error(`no master holds slot ${slot}`);
      return owner.master.port;
    },
    async failOver(port) {
      const replica = await replicaOf(port);
      await replica.client.sendCommand(['CLUSTER', 'FAILOVER']);
      await eventually(async () => (await nodesSeenBy(replica.client)).get(replica.id)!.flags.includes('master'), 20_000);
      const old = byPort(port);
      old.client.destroy();
      old.process.kill('SIGTERM');
      await once(old.process, 'exit');
      old.running = false;
      await whole(nodes);
      return replica.port;
    },
    killMaster: async (port) => (await crashMaster(port)).promoted,
    crashMaster,
    stop,
  };
}

/** Every running node says the cluster is whole (all slots served) and every running replica is in sync with its master. */
async function whole(nodes: ClusterNode[]): Promise<void> {
  await eventually(
    async () => {
      for (const node of nodes.filter((n) => n.running)) {
        if ((await clusterInfo(node.client)).cluster_state !== 'ok') return false;
        const replication = await node.client.info('replication');
        if (replication.includes('role:slave') && !replication.includes('master_link_status:up')) return false;
      }
      return true;
    },
    30_000,
    50,
  );
}
