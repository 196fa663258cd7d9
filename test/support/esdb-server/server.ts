import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import { Empty, StreamIdentifier, UUID } from '@eventstore/db-client/generated/shared_pb';
import { AppendReq, AppendResp, ReadReq, ReadResp } from '@eventstore/db-client/generated/streams_pb';
import { StreamsService } from '@eventstore/db-client/generated/streams_grpc_pb';
import { ClusterInfo, EndPoint, MemberInfo } from '@eventstore/db-client/generated/gossip_pb';
import { GossipService } from '@eventstore/db-client/generated/gossip_grpc_pb';
import { SupportedMethod, SupportedMethods } from '@eventstore/db-client/generated/serverfeatures_pb';
import { ServerFeaturesService } from '@eventstore/db-client/generated/serverfeatures_grpc_pb';
import { ProposedEvent, StoredEvent, TransactionLog, systemEvent } from './transaction-log';

/**
 * An EventStoreDB node for tests: in memory, over real gRPC (@grpc/grpc-js, the version the
 * official client loads), serving the client's own generated service definitions. It speaks what
 * the gateway and `@eventstore/db-client` 6.2.1 use: server features, gossip, Streams.Read (a
 * stream, $all, forwards and backwards, subscriptions with filters, checkpoints and caught-up) and
 * Streams.Append; stream metadata (`$$name`, which the client's set/getStreamMetadata append and read)
 * with the `$maxCount` and `$maxAge` that reads of a stream honour.
 *
 * Faithful to the server's documented behaviour and its published gRPC status mapping (the
 * `RpcExceptions` of EventStoreDB's source: codes and `exception` metadata keys). Where only the
 * client's source tells what the server sends, the comment says "modelled from the client".
 * Not served: BatchAppend (the adapter always passes credentials, so the client never uses it, and
 * it is not advertised in server features, so no client will), Delete, Tombstone, persistent
 * subscriptions, projections, users, operations: those answer UNIMPLEMENTED.
 */

export interface TestUser {
  password: string;
  groups: string[];
}

export interface EsdbServerOptions {
  /** The data: a fresh log unless given (a cluster's nodes share one). */
  log?: TransactionLog;
  /** 0 (the default): any free port. */
  port?: number;
  /** The server's MaxAppendSize (1,048,576 bytes by default, as the real server's). */
  maxAppendSize?: number;
  /** Secure node: TLS with this key and certificate, and basic authentication enforced. */
  tls?: { key: Buffer; cert: Buffer };
  /** Users of a secure node: by default the real server's admin ($admins) and ops ($ops), password changeit. */
  users?: Record<string, TestUser>;
  /** After every this many appends the node writes a `$statsCollected` record of its own (none by default). */
  systemEventEvery?: number;
}

/** What a node does to the next calls of a kind. */
export type Fault =
  /** Drops every connection before doing anything (the call fails UNAVAILABLE; nothing written). */
  | 'drop'
  /** Writes the append, then drops every connection before answering. */
  | 'drop-after-commit'
  /** Never answers: the call lasts until the client's deadline cancels it. Nothing written. */
  | 'stall'
  /** Writes the append and never answers. */
  | 'stall-after-commit'
  /** Refuses as a node that is not the leader does (NotLeader, with the leader's endpoint). */
  | 'not-leader';

export type CallKind = 'append' | 'read' | 'subscribe';

export type NodeState = 'leader' | 'follower';

export interface Endpoint {
  host: string;
  port: number;
}

/** What a node tells gossip about itself and asks of its cluster. */
export interface ClusterView {
  members(): Array<{ instanceId: string; endpoint: Endpoint; state: NodeState; alive: boolean }>;
  leader(): Endpoint | null;
}

const DEFAULT_USERS: Record<string, TestUser> = {
  admin: { password: 'changeit', groups: ['$admins'] },
  ops: { password: 'changeit', groups: ['$ops'] },
};

const SERVER_VERSION = '24.10.0';

/** The window of a filtered subscription when the client asks for `count`: 32 events, the clients' documented default. */
const DEFAULT_FILTER_WINDOW = 32;

/** A status the server ends a call with (grpc-js takes an Error carrying code, details and metadata). */
class ServiceError extends Error {
  readonly metadata = new grpc.Metadata();

  constructor(
    readonly code: grpc.status,
    readonly details: string,
    metadata: Record<string, string>,
  ) {
    super(details);
    for (const [key, value] of Object.entries(metadata)) this.metadata.set(key, value);
  }
}

const failure = (code: grpc.status, details: string, metadata: Record<string, string> = {}): ServiceError =>
  new ServiceError(code, details, metadata);

// The real server's errors (RpcExceptions in its source), with their `exception` metadata keys.
const errors = {
  accessDenied: () => failure(grpc.status.PERMISSION_DENIED, 'Access Denied', { exception: 'access-denied' }),
  // Modelled from the client: a wrong password is refused before any stream is looked at.
  badLogin: () => failure(grpc.status.UNAUTHENTICATED, 'Bad login'),
  notLeader: (leader: Endpoint) =>
    failure(grpc.status.NOT_FOUND, 'Leader info available', {
      exception: 'not-leader',
      'leader-endpoint-host': leader.host,
      'leader-endpoint-port': String(leader.port),
    }),
  maxAppendSize: (max: number) =>
    failure(grpc.status.INVALID_ARGUMENT, `Maximum Append Size of ${max} Exceeded.`, {
      exception: 'maximum-append-size-exceeded',
      'maximum-append-size': String(max),
    }),
  missingMetadata: (name: string) =>
    failure(grpc.status.INVALID_ARGUMENT, `Required Metadata Property '${name}' is missing`, {
      exception: 'missing-required-metadata-property',
      'required-metadata-properties': 'type,content-type',
    }),
  invalidPosition: () => failure(grpc.status.INVALID_ARGUMENT, 'Trying to read from an invalid position.'),
  unavailable: () => failure(grpc.status.UNAVAILABLE, 'Server Is Not Ready'),
};

const empty = () => new Empty();

/** A filter of a read or subscription of $all, as the request gives it. */
interface Filter {
  matches(event: StoredEvent): boolean;
  /** Checkpoint after this many events looked at. */
  checkpointEvery: number;
}

function filterOf(options: ReadReq.Options): Filter | null {
  if (!options.hasFilter()) return null;
  const filter = options.getFilter()!;
  const onStream = filter.hasStreamIdentifier();
  const expression = onStream ? filter.getStreamIdentifier()! : filter.getEventType()!;
  const prefixes = expression.getPrefixList();
  const regex = expression.getRegex() ? new RegExp(expression.getRegex()) : null;
  const window = filter.hasMax() ? filter.getMax() : DEFAULT_FILTER_WINDOW;
  return {
    matches: (event) => {
      const subject = onStream ? event.streamId : event.type;
      if (regex) return regex.test(subject);
      return prefixes.length === 0 || prefixes.some((prefix) => subject.startsWith(prefix));
    },
    checkpointEvery: window * Math.max(1, filter.getCheckpointintervalmultiplier()),
  };
}

function recordOf(event: StoredEvent): ReadResp.ReadEvent.RecordedEvent {
  const record = new ReadResp.ReadEvent.RecordedEvent();
  const id = new UUID();
  // The client asks for ids as strings (uuid_option string), the only form served here.
  id.setString(event.id);
  record.setId(id);
  const stream = new StreamIdentifier();
  stream.setStreamName(Buffer.from(event.streamId));
  record.setStreamIdentifier(stream);
  record.setStreamRevision(event.revision.toString());
  record.setPreparePosition(event.position.toString());
  record.setCommitPosition(event.position.toString());
  record.getMetadataMap().set('type', event.type).set('content-type', event.contentType).set('created', event.created.toString());
  record.setData(event.data);
  record.setCustomMetadata(event.metadata);
  return record;
}

function eventResponse(event: StoredEvent): ReadResp {
  const read = new ReadResp.ReadEvent();
  read.setEvent(recordOf(event));
  read.setCommitPosition(event.position.toString());
  const response = new ReadResp();
  response.setEvent(read);
  return response;
}

function checkpointResponse(position: bigint): ReadResp {
  const checkpoint = new ReadResp.Checkpoint();
  checkpoint.setCommitPosition(position.toString());
  checkpoint.setPreparePosition(position.toString());
  const response = new ReadResp();
  response.setCheckpoint(checkpoint);
  return response;
}

const streamName = (identifier: StreamIdentifier | undefined): string =>
  Buffer.from(identifier?.getStreamName_asU8() ?? new Uint8Array()).toString('utf8');

/** Basic authentication as a secure node checks it: null when the call may go on, else its refusal. */
type Caller = { user: string; groups: string[] } | 'anonymous' | 'insecure';

export class EsdbServer {
  private server: grpc.Server | null = null;
  private port = 0;
  private readonly faults = new Map<CallKind, Fault[]>();
  /** What ends each open subscription or stalled call when the node goes down. */
  private readonly open = new Set<() => void>();
  private appends = 0;
  readonly instanceId = randomUUID();
  state: NodeState = 'leader';
  /** Calls that reached the node, by kind (what a test can count). */
  readonly calls: Record<CallKind, number> = { append: 0, read: 0, subscribe: 0 };
  /** Who waits for the next call of a kind (nextCall). */
  private callWaiters: Array<{ kind: CallKind; reached: () => void }> = [];

  private constructor(
    public log: TransactionLog,
    private readonly options: EsdbServerOptions,
    private cluster: ClusterView | null,
  ) {}

  static async start(options: EsdbServerOptions = {}, cluster: ClusterView | null = null): Promise<EsdbServer> {
    const node = new EsdbServer(options.log ?? new TransactionLog(), options, cluster);
    await node.listen(options.port ?? 0);
    return node;
  }

  get endpoint(): Endpoint {
    return { host: '127.0.0.1', port: this.port };
  }

  get running(): boolean {
    return this.server !== null;
  }

  /** The connection string the gateway is given for this node. */
  get url(): string {
    return this.options.tls ? `esdb://admin:changeit@localhost:${this.port}` : `esdb://127.0.0.1:${this.port}?tls=false`;
  }

  /** The next `times` calls of `kind` meet `fault`. */
  failNext(kind: CallKind, fault: Fault, times = 1): void {
    const queue = this.faults.get(kind) ?? [];
    for (let i = 0; i < times; i++) queue.push(fault);
    this.faults.set(kind, queue);
  }

  /** Resolves as the next call of `kind` reaches the node, before it is served: a test acts with a call in flight. */
  nextCall(kind: CallKind): Promise<void> {
    return new Promise((reached) => this.callWaiters.push({ kind, reached }));
  }

  private called(kind: CallKind): void {
    this.calls[kind] += 1;
    const reached = this.callWaiters.filter((waiter) => waiter.kind === kind);
    if (reached.length === 0) return;
    this.callWaiters = this.callWaiters.filter((waiter) => waiter.kind !== kind);
    for (const waiter of reached) waiter.reached();
  }

  /** Faults queued and not yet met. */
  get pendingFaults(): number {
    return [...this.faults.values()].reduce((sum, queue) => sum + queue.length, 0);
  }

  /** Writes a record of the server's own into $all, between the clients' events. */
  writeSystemEvent(): StoredEvent {
    return this.log.write(`$stats-127.0.0.1:${this.port}`, [systemEvent('$statsCollected', { at: Date.now() })])[0];
  }

  /** Every connection dropped at once (as a restart or a network cut does); the node listens again at once with its data. */
  async dropConnections(): Promise<void> {
    this.shutdown();
    await this.listen(this.port);
  }

  /** Down: nothing listens on its port. */
  async stop(): Promise<void> {
    this.shutdown();
  }

  /** Up again on the same port: with its data, or empty (as a node with an in-memory database). */
  async restart({ empty: wipe = false }: { empty?: boolean } = {}): Promise<void> {
    this.shutdown();
    if (wipe) this.log = new TransactionLog();
    await this.listen(this.port);
  }

  async close(): Promise<void> {
    this.shutdown();
  }

  private shutdown(): void {
    for (const end of [...this.open]) end();
    this.open.clear();
    this.server?.forceShutdown();
    this.server = null;
  }

  private async listen(port: number): Promise<void> {
    const server = new grpc.Server();
    server.addService(StreamsService, {
      read: (call: grpc.ServerWritableStream<ReadReq, ReadResp>) => this.read(call),
      append: (call: grpc.ServerReadableStream<AppendReq, AppendResp>, callback: grpc.sendUnaryData<AppendResp>) =>
        this.append(call, callback),
    });
    server.addService(GossipService, {
      read: (_call: grpc.ServerUnaryCall<Empty, ClusterInfo>, callback: grpc.sendUnaryData<ClusterInfo>) =>
        callback(null, this.gossip()),
    });
    server.addService(ServerFeaturesService, {
      getSupportedMethods: (_call: unknown, callback: grpc.sendUnaryData<SupportedMethods>) => callback(null, this.features()),
    });
    const credentials = this.options.tls
      ? grpc.ServerCredentials.createSsl(null, [{ private_key: this.options.tls.key, cert_chain: this.options.tls.cert }])
      : grpc.ServerCredentials.createInsecure();
    // The port of a node that just went down may take a moment to be free again.
    for (let attempt = 0; ; attempt++) {
      try {
        this.port = await new Promise<number>((resolve, reject) =>
          server.bindAsync(`127.0.0.1:${port}`, credentials, (error, bound) => (error ? reject(error) : resolve(bound))),
        );
        break;
      } catch (error) {
        if (attempt >= 50 || port === 0) throw error;
        await delay(20);
      }
    }
    this.server = server;
  }

  private gossip(): ClusterInfo {
    const members = this.cluster?.members() ?? [
      { instanceId: this.instanceId, endpoint: this.endpoint, state: this.state, alive: true },
    ];
    const info = new ClusterInfo();
    info.setMembersList(
      members.map((member) => {
        const id = new UUID();
        id.setString(member.instanceId);
        const endpoint = new EndPoint();
        endpoint.setAddress(member.endpoint.host);
        endpoint.setPort(member.endpoint.port);
        const memberInfo = new MemberInfo();
        memberInfo.setInstanceId(id);
        memberInfo.setTimeStamp((BigInt(Date.now()) * 10_000n).toString());
        memberInfo.setState(member.state === 'leader' ? MemberInfo.VNodeState.LEADER : MemberInfo.VNodeState.FOLLOWER);
        memberInfo.setIsAlive(member.alive);
        memberInfo.setHttpEndPoint(endpoint);
        return memberInfo;
      }),
    );
    return info;
  }

  /**
   * The methods served, listed as the real server lists its own (names in lower case; the client
   * compares them so). Only those served here are listed; the features named are modelled from
   * the client's source, which reads none of them for Read or Append.
   */
  private features(): SupportedMethods {
    const supported = new SupportedMethods();
    supported.setEventStoreServerVersion(SERVER_VERSION);
    supported.setMethodsList(
      [
        ['read', ['position', 'events']],
        ['append', []],
      ].map(([method, features]) => {
        const entry = new SupportedMethod();
        entry.setServiceName('event_store.client.streams.streams');
        entry.setMethodName(method as string);
        entry.setFeaturesList(features as string[]);
        return entry;
      }),
    );
    return supported;
  }

  private nextFault(kind: CallKind): Fault | undefined {
    return this.faults.get(kind)?.shift();
  }

  private caller(metadata: grpc.Metadata): Caller | ServiceError {
    if (!this.options.tls) return 'insecure';
    const header = metadata.get('authorization')[0];
    if (typeof header !== 'string') return 'anonymous';
    const match = /^Basic\s+(.+)$/i.exec(header);
    if (!match) return errors.badLogin();
    const decoded = Buffer.from(match[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const name = decoded.slice(0, colon);
    const user = (this.options.users ?? DEFAULT_USERS)[name];
    if (colon < 0 || !user || user.password !== decoded.slice(colon + 1)) return errors.badLogin();
    return { user: name, groups: user.groups };
  }

  /**
   * The default ACLs of a secure node: $all and system streams ($-prefixed) for $admins (and $ops
   * may read $all); user streams for any authenticated user (anonymous access is off by default
   * since 23.10). An insecure node checks nothing.
   */
  private refusal(metadata: grpc.Metadata, target: { all: true } | { stream: string }): ServiceError | null {
    const caller = this.caller(metadata);
    if (caller === 'insecure') return null;
    if (caller === 'anonymous') return errors.accessDenied();
    if (caller instanceof ServiceError) return caller;
    const admin = caller.groups.includes('$admins');
    if ('all' in target) return admin || caller.groups.includes('$ops') ? null : errors.accessDenied();
    // A stream's metadata (`$$name`) is read and written under that stream's ACL ($mr, $mw): for a
    // user stream, any signed-in user by default (SystemSettings.Default in the server's source).
    const governing = target.stream.startsWith('$$') ? target.stream.slice(2) : target.stream;
    return governing.startsWith('$') && !admin ? errors.accessDenied() : null;
  }

  /** A follower asked for the leader: NotLeader with the leader's endpoint. */
  private leaderRefusal(metadata: grpc.Metadata): ServiceError | null {
    if (this.state === 'leader' || metadata.get('requires-leader')[0] !== 'true') return null;
    const leader = this.cluster?.leader();
    return leader ? errors.notLeader(leader) : errors.unavailable();
  }

  /** Applies a fault that refuses or drops before anything happens; true if the call is taken care of. */
  private preempted(fault: Fault | undefined, fail: (error: ServiceError) => void, hold: () => void): boolean {
    if (fault === 'drop') {
      void this.dropConnections();
      return true;
    }
    if (fault === 'stall') {
      hold();
      return true;
    }
    if (fault === 'not-leader') {
      const leader = this.cluster?.leader() ?? this.endpoint;
      fail(errors.notLeader(leader));
      return true;
    }
    return false;
  }

  /** Keeps a call unanswered until the client gives up on it or the node goes down. */
  private hold(call: { on(event: 'cancelled', listener: () => void): unknown }, end: () => void): void {
    const release = () => {
      this.open.delete(release);
      end();
    };
    this.open.add(release);
    call.on('cancelled', release);
  }

  private read(call: grpc.ServerWritableStream<ReadReq, ReadResp>): void {
    const options = call.request.getOptions();
    if (!options) return void call.emit('error', failure(grpc.status.INVALID_ARGUMENT, 'Options are required'));
    const subscribing = options.hasSubscription();
    const kind: CallKind = subscribing ? 'subscribe' : 'read';
    this.called(kind);
    const fail = (error: ServiceError): void => void call.emit('error', error);
    const fault = this.nextFault(kind);
    if (this.preempted(fault, fail, () => this.hold(call, () => call.end()))) return;
    const refused =
      this.leaderRefusal(call.metadata) ??
      this.refusal(
        call.metadata,
        options.hasAll() ? { all: true } : { stream: streamName(options.getStream()?.getStreamIdentifier()) },
      );
    if (refused) return fail(refused);
    try {
      if (subscribing) this.subscribe(call, options);
      else {
        for (const response of options.hasAll() ? this.readAll(options) : this.readStream(options)) call.write(response);
        call.end();
      }
    } catch (error) {
      fail(error as ServiceError);
    }
  }

  /**
   * The events of a stream a read returns: those its metadata (the last `$metadata` event of
   * `$$name`) keeps. `$maxCount` keeps the last N, `$maxAge` (seconds) those younger than it; the
   * others are gone from reads of the stream at once, and from $all only when a scavenge removes them
   * (docs: "Stream metadata"; never here). A metadata stream keeps its last event alone
   * (SystemConsts.MetastreamMaxCount = 1 in the server's source).
   */
  private kept(name: string): readonly StoredEvent[] {
    const events = this.log.stream(name);
    if (name.startsWith('$$')) return events.slice(-1);
    const [metadata] = this.log.stream(`$$${name}`).slice(-1);
    if (!metadata) return events;
    let settings: { $maxCount?: unknown; $maxAge?: unknown };
    try {
      settings = JSON.parse(Buffer.from(metadata.data).toString('utf8')) as typeof settings;
    } catch {
      return events;
    }
    let kept = events;
    if (typeof settings.$maxCount === 'number' && settings.$maxCount > 0) kept = kept.slice(-settings.$maxCount);
    if (typeof settings.$maxAge === 'number' && settings.$maxAge > 0) {
      const oldest = (BigInt(Date.now()) - BigInt(settings.$maxAge) * 1000n) * 10_000n;
      kept = kept.filter((event) => event.created >= oldest);
    }
    return kept;
  }

  private *readStream(options: ReadReq.Options): Iterable<ReadResp> {
    const stream = options.getStream()!;
    const name = streamName(stream.getStreamIdentifier());
    // A stream whose events its metadata no longer keeps exists all the same: a read of it finds none.
    if (this.log.stream(name).length > 0 && this.kept(name).length === 0) return;
    const events = this.kept(name);
    if (events.length === 0) {
      // Client 6.x does not send the control option, so the server answers a missing stream with a message.
      const notFound = new ReadResp.StreamNotFound();
      notFound.setStreamIdentifier(stream.getStreamIdentifier());
      const response = new ReadResp();
      response.setStreamNotFound(notFound);
      yield response;
      return;
    }
    const count = BigInt(options.getCount() || '0');
    const backwards = options.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS;
    const last = events[events.length - 1].revision;
    const from = stream.hasRevision() ? BigInt(stream.getRevision()) : stream.hasEnd() ? last + (backwards ? 0n : 1n) : 0n;
    let sent = 0n;
    const ordered = backwards ? [...events].reverse() : events;
    for (const event of ordered) {
      if (sent >= count) return;
      if (backwards ? event.revision > from : event.revision < from) continue;
      sent += 1n;
      yield eventResponse(event);
    }
  }

  /** The index in the log a read of $all starts at; an exact event position or the end only. */
  private indexOf(position: ReadReq.Options.Position): number {
    const commit = BigInt(position.getCommitPosition());
    const prepare = BigInt(position.getPreparePosition());
    if (commit !== prepare) throw errors.invalidPosition();
    if (commit === this.log.end) return this.log.events.length;
    const index = this.log.indexAt(commit);
    if (index < 0) throw errors.invalidPosition();
    return index;
  }

  private *readAll(options: ReadReq.Options): Iterable<ReadResp> {
    const all = options.getAll()!;
    const count = BigInt(options.getCount() || '0');
    const backwards = options.getReadDirection() === ReadReq.Options.ReadDirection.BACKWARDS;
    const filter = filterOf(options);
    const { events } = this.log;
    const at = all.hasStart() ? 0 : all.hasEnd() ? events.length : this.indexOf(all.getPosition()!);
    let sent = 0n;
    // Forwards: the event at the position and those after it. Backwards: those before it.
    for (let i = backwards ? at - 1 : at; backwards ? i >= 0 : i < events.length; i += backwards ? -1 : 1) {
      if (sent >= count) return;
      if (filter && !filter.matches(events[i])) continue;
      sent += 1n;
      yield eventResponse(events[i]);
    }
  }

  private subscribe(call: grpc.ServerWritableStream<ReadReq, ReadResp>, options: ReadReq.Options): void {
    const confirmation = new ReadResp.SubscriptionConfirmation();
    confirmation.setSubscriptionId(randomUUID());
    const confirmed = new ReadResp();
    confirmed.setConfirmation(confirmation);
    call.write(confirmed);

    const { events } = this.log;
    const filter = filterOf(options);
    let start: number;
    let accepts: (event: StoredEvent) => boolean;
    if (options.hasAll()) {
      // A subscription to $all starts after its position.
      const all = options.getAll()!;
      start = all.hasStart() ? 0 : all.hasEnd() ? events.length : this.indexOf(all.getPosition()!) + 1;
      accepts = (event) => !filter || filter.matches(event);
    } else {
      const stream = options.getStream()!;
      const name = streamName(stream.getStreamIdentifier());
      const after = stream.hasRevision() ? BigInt(stream.getRevision()) : stream.hasEnd() ? this.log.lastRevision(name) : -1n;
      start = 0;
      accepts = (event) => event.streamId === name && event.revision > after;
    }
    let seen = 0;
    const deliver = (event: StoredEvent): void => {
      if (accepts(event)) call.write(eventResponse(event));
      seen += 1;
      if (filter && seen % filter.checkpointEvery === 0) call.write(checkpointResponse(event.position));
    };
    // Written without waiting for the client to drain (the tests' logs are small); grpc-js buffers.
    for (let i = start; i < events.length; i++) deliver(events[i]);
    const caughtUp = new ReadResp();
    caughtUp.setCaughtUp(new ReadResp.CaughtUp());
    call.write(caughtUp);
    // Registered in the same turn as the catch-up: nothing written in between is missed.
    const unlisten = this.log.listen(deliver);
    const end = () => {
      unlisten();
      this.open.delete(end);
    };
    this.open.add(end);
    call.on('cancelled', end);
    call.on('close', end);
  }

  private append(call: grpc.ServerReadableStream<AppendReq, AppendResp>, callback: grpc.sendUnaryData<AppendResp>): void {
    this.called('append');
    let answered = false;
    const answer = (error: ServiceError | null, response?: AppendResp) => {
      if (answered) return;
      answered = true;
      if (error) callback(error);
      else callback(null, response);
    };
    const fault = this.nextFault('append');
    if (this.preempted(fault, answer, () => this.hold(call, () => undefined))) {
      answered = true;
      return;
    }
    let header: AppendReq.Options | undefined;
    const proposed: ProposedEvent[] = [];
    let size = 0;
    const maxAppendSize = this.options.maxAppendSize ?? 1_048_576;
    call.on('cancelled', () => (answered = true));
    call.on('data', (request: AppendReq) => {
      if (answered) return;
      if (request.hasOptions()) {
        header = request.getOptions();
        const refused =
          this.leaderRefusal(call.metadata) ?? this.refusal(call.metadata, { stream: streamName(header!.getStreamIdentifier()) });
        if (refused) answer(refused);
        return;
      }
      const message = request.getProposedMessage();
      if (!message) return;
      const type = message.getMetadataMap().get('type');
      const contentType = message.getMetadataMap().get('content-type');
      if (type === undefined) return answer(errors.missingMetadata('type'));
      if (contentType === undefined) return answer(errors.missingMetadata('content-type'));
      const data = message.getData_asU8();
      const metadata = message.getCustomMetadata_asU8();
      // The server counts each event as it arrives and refuses once the append is over the limit
      // (an event's size on disk: data, metadata and its type; modelled from the server's source).
      size += data.length + metadata.length + 2 * Buffer.byteLength(type);
      if (size > maxAppendSize) return answer(errors.maxAppendSize(maxAppendSize));
      proposed.push({ id: message.getId()?.getString() ?? randomUUID(), type, contentType, data, metadata });
    });
    call.on('end', () => {
      if (answered) return;
      if (!header) return answer(failure(grpc.status.INVALID_ARGUMENT, 'Options are required'));
      const response = this.commit(streamName(header.getStreamIdentifier()), header, proposed);
      if (fault === 'drop-after-commit') {
        answered = true;
        void this.dropConnections();
        return;
      }
      if (fault === 'stall-after-commit') {
        answered = true;
        this.hold(call, () => undefined);
        return;
      }
      answer(null, response);
    });
  }

  /** Decides an append: written, recognised as already written (idempotent), or wrong expected version. */
  private commit(streamId: string, header: AppendReq.Options, proposed: ProposedEvent[]): AppendResp {
    const events = this.log.stream(streamId);
    const current = this.log.lastRevision(streamId);
    const expected = header.hasRevision() ? BigInt(header.getRevision()) : null;
    // Idempotency by event id: an append whose events are those already at the place it expects
    // is answered with success and not written again. With 'any' (or stream_exists) the server
    // recognises the append by its first event's id wherever it is in the stream.
    const firstIndex =
      expected !== null
        ? Number(expected) + 1
        : header.hasNoStream()
          ? 0
          : events.findIndex((event) => event.id === proposed[0]?.id);
    const there = firstIndex >= 0 ? events.slice(firstIndex, firstIndex + proposed.length) : [];
    if (proposed.length > 0 && there.length > 0 && there[0].id === proposed[0].id) {
      if (there.length === proposed.length && there.every((event, i) => event.id === proposed[i].id)) {
        const success = new AppendResp.Success();
        success.setCurrentRevision(there[there.length - 1].revision.toString());
        // A recognised repeat has no position of its own (modelled from the client, which then has none).
        success.setNoPosition(empty());
        const response = new AppendResp();
        response.setSuccess(success);
        return response;
      }
      return this.wrongExpectedVersion(header, current);
    }
    const matches =
      header.hasAny() ||
      (header.hasNoStream() && current === -1n) ||
      (header.hasStreamExists() && current >= 0n) ||
      (expected !== null && expected === current);
    if (!matches) return this.wrongExpectedVersion(header, current);
    if (proposed.length === 0) {
      const success = new AppendResp.Success();
      if (current >= 0n) success.setCurrentRevision(current.toString());
      else success.setNoStream(empty());
      success.setNoPosition(empty());
      const response = new AppendResp();
      response.setSuccess(success);
      return response;
    }
    const written = this.log.write(streamId, proposed);
    this.appends += 1;
    const every = this.options.systemEventEvery;
    if (every && this.appends % every === 0) this.writeSystemEvent();
    const success = new AppendResp.Success();
    success.setCurrentRevision(written[written.length - 1].revision.toString());
    // One position for the append: the first event's (modelled from the client's source and its
    // tests; the adapter reads a several-event append's last event back instead of trusting it).
    const position = new AppendResp.Position();
    position.setCommitPosition(written[0].position.toString());
    position.setPreparePosition(written[0].position.toString());
    success.setPosition(position);
    const response = new AppendResp();
    response.setSuccess(success);
    return response;
  }

  /** Wrong expected version is an answer, not an error status, since server 20.6.1. */
  private wrongExpectedVersion(header: AppendReq.Options, current: bigint): AppendResp {
    const wrong = new AppendResp.WrongExpectedVersion();
    if (current >= 0n) wrong.setCurrentRevision(current.toString());
    else wrong.setCurrentNoStream(empty());
    if (header.hasRevision()) wrong.setExpectedRevision(header.getRevision());
    else if (header.hasNoStream()) wrong.setExpectedNoStream(empty());
    else if (header.hasStreamExists()) wrong.setExpectedStreamExists(empty());
    else wrong.setExpectedAny(empty());
    const response = new AppendResp();
    response.setWrongExpectedVersion(wrong);
    return response;
  }
}
