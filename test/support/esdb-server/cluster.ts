import { ClusterView, Endpoint, EsdbServer, EsdbServerOptions, NodeState } from './server';
import { TransactionLog } from './transaction-log';

/**
 * A test cluster of EventStoreDB nodes over one log (replication is instant here). Gossip on every
 * node lists every member with its state; the client, given the nodes' endpoints, asks gossip for
 * the leader and talks to it. Followers take writes and forward them to the leader, as real ones
 * do, unless a call requires the leader (`requires-leader`): then NotLeader with its endpoint.
 */
export class EsdbCluster implements ClusterView {
  readonly nodes: EsdbServer[] = [];

  private constructor() {}

  static async start(size = 3, options: Omit<EsdbServerOptions, 'log' | 'port'> = {}): Promise<EsdbCluster> {
    const cluster = new EsdbCluster();
    const log = new TransactionLog();
    for (let i = 0; i < size; i++) {
      const node = await EsdbServer.start({ ...options, log }, cluster);
      node.state = i === 0 ? 'leader' : 'follower';
      cluster.nodes.push(node);
    }
    return cluster;
  }

  /** Every node's endpoint: the client discovers the leader through gossip from any of them. */
  get url(): string {
    return `esdb://${this.nodes.map((node) => `127.0.0.1:${node.endpoint.port}`).join(',')}?tls=false`;
  }

  get leaderNode(): EsdbServer {
    const leader = this.nodes.find((node) => node.state === 'leader');
    if (!leader) throw new Error('the cluster has no leader');
    return leader;
  }

  members(): Array<{ instanceId: string; endpoint: Endpoint; state: NodeState; alive: boolean }> {
    return this.nodes.map((node) => ({
      instanceId: node.instanceId,
      endpoint: node.endpoint,
      state: node.state,
      alive: node.running,
    }));
  }

  leader(): Endpoint | null {
    const leader = this.nodes.find((node) => node.state === 'leader' && node.running);
    return leader ? leader.endpoint : null;
  }

  /**
   * A leader change as a failing leader causes it: the leader goes down (every connection to it
   * dropped), node `to` is elected, and the old one comes back as a follower with the same data.
   */
  async switchLeader(to: number): Promise<void> {
    const old = this.leaderNode;
    if (old === this.nodes[to]) throw new Error(`node ${to} is the leader already`);
    await old.stop();
    old.state = 'follower';
    this.nodes[to].state = 'leader';
    await old.restart();
  }

  async close(): Promise<void> {
    await Promise.all(this.nodes.map((node) => node.close()));
  }
}
