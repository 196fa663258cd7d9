import { existsSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { EventStoreUrlError, parseEventStoreUrl } from '../eventstore/eventstoredb-connection';
import { DEFAULT_BREAKER } from '../routing/breaker';
import { type Network, NetworkListError, parseNetworks } from './networks';

/** The catalogue that ships with the service, found from here whether running compiled (dist/) or not. */
function shippedCatalogue(): string {
  for (let dir = __dirname; dir !== dirname(dir); dir = dirname(dir)) {
    const candidate = join(dir, 'catalogue', 'default.json');
    if (existsSync(candidate)) return candidate;
  }
  return resolve('catalogue', 'default.json');
}

export const DEFAULT_CATALOGUE = shippedCatalogue();

/** The service's configuration, read from the environment and checked before anything starts. */
export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** Unset: read models in this process. Set: in Redis, shared by every instance (a cluster: one or more of its nodes, comma-separated). */
  redisUrl: string | null;
  /** `redisUrl` names nodes of a Redis Cluster. */
  redisCluster: boolean;
  /** Every Redis key starts with this, so several deployments (or test runs) can share a Redis. */
  redisPrefix: string;
  /** How long the start waits for Redis before giving up (exit 1); once started, reconnection has no bound. */
  redisConnectTimeoutMs: number;
  /** Gateway processes sharing the port (`WORKERS`; `auto`: one per core); 1: this process serves alone, as without it. */
  workers: number;
  /**
   * Unset: the embedded SQLite log in `dataDir`. Set: EventStoreDB, as a connection string
   * `@eventstore/db-client` parses (`kurrentdb://` and `kdb://` are rewritten to `esdb://`).
   */
  eventStoreUrl: string | null;
  requestTimeoutMs: number;
  /** On SIGTERM, how long in-flight requests may go on before they are cut (and settled as cut). */
  shutdownGraceMs: number;
  /**
   * On SIGTERM, how long the instance goes on taking new requests while its readiness already says
   * it stops (SHUTDOWN_DRAIN_MS): a load balancer stops sending once it has seen that, not before.
   */
  shutdownDrainMs: number;
  /** OTLP/HTTP collector for traces (OTEL_EXPORTER_OTLP_ENDPOINT); null: no tracing. */
  otlpEndpoint: string | null;
  /** A port of its own for GET /metrics (then not on the service port); null: the service port. */
  metricsPort: number | null;
  /** Longest time to receive a request's headers and body (a client that stalls mid-body is cut off). */
  requestReadTimeoutMs: number;
  reservationTtlMs: number;
  pendingHoldMs: number;
  /**
   * On EventStoreDB, how long a serving instance's claim in the log on its read models' store holds
   * without renewal (`SERVING_LEASE_MS`); renewed every third of it. A store's instances that all died
   * without stopping keep another store's out for this long.
   */
  servingLeaseMs: number;
  sweepIntervalMs: number;
  /** How often a stream delivering output records its progress in the log (what a crash then still bills). */
  progressIntervalMs: number;
  /**
   * The most uses of each hosted tool (web searches…) a request carrying it may make: its
   * reservation holds for them, and hosts are told the bound (`max_uses`, `max_tool_calls`).
   */
  hostedToolMaxUses: number;
  requestLogRetention: number;
  /** How often a follower of the SQLite log looks for events appended by other processes. */
  logPollMs: number;
  cataloguePath: string;
  /** Port of the built-in simulated host; null when it is not started. */
  simulatedHostPort: number | null;
  /** Longest wait for a host to begin answering before trying the model's next host. */
  hostFirstByteTimeoutMs: number;
  /** A host's failures in a row (for one model) that open its circuit; 0: circuits never open. */
  hostBreakerFailures: number;
  /** How long an open circuit passes its host over before one probe call goes. */
  hostBreakerCooldownMs: number;
  /** A comment line on quiet event streams this often, so proxies keep them open. */
  sseKeepAliveMs: number;
  /** Longest a read route asked for `min_position` waits for the read models to reach it (then 503). */
  minPositionWaitMs: number;
  /** Largest request body accepted. */
  bodyLimitBytes: number;
  /** Whether people may create dashboard accounts themselves. */
  dashboardSignup: boolean;
  /** The address clients reach the service at (`PUBLIC_BASE_URL`), shown in the dashboard; null: the browser's own. */
  publicBaseUrl: string | null;
  /** Signs dashboard sessions; unset: a secret made once in DATA_DIR. */
  dashboardSecret: string | undefined;
  /** pino's level: fatal, error, warn, info, debug, trace or silent. */
  logLevel: string;
  /** Human-readable log lines (pino-pretty) instead of JSON. */
  logPretty: boolean;
  /** Prometheus metrics at GET /metrics. */
  metrics: boolean;
  /** Cache-sticky routing (`STICKY_ROUTING`): a conversation's next request goes to the host that served it while its cache lives. */
  stickyRouting: boolean;
  /** Alerts' webhooks: the longest one attempt may take (`ALERT_ATTEMPT_TIMEOUT_MS`). */
  alertAttemptTimeoutMs: number;
  /** Alerts' webhooks: the first backoff after a failed attempt, doubling each time up to an hour (`ALERT_RETRY_BASE_MS`). */
  alertRetryBaseMs: number;
  /** Alerts' webhooks: attempts before one is given up (`ALERT_MAX_ATTEMPTS`). */
  alertMaxAttempts: number;
  /**
   * Alerts' webhooks: the networks they may reach although loopback, private, link-local or otherwise
   * special (`ALERT_WEBHOOK_ALLOW_CIDRS`); none by default (see alerts/webhook-destinations.ts).
   */
  alertWebhookAllowCidrs: Network[];
  /** Alerts: the least time between two test alerts of an organization (`ALERT_TEST_INTERVAL_MS`); 0: no bound. */
  alertTestIntervalMs: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`configuration: ${variable} ${problem}`);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function integer(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(name, `must be a whole number, got "${raw}"`);
  const value = Number(raw.trim());
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${value}`);
  return value;
}

function onOff(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name]?.trim().toLowerCase();
  if (!raw) return fallback;
  if (['on', 'true', '1', 'yes'].includes(raw)) return true;
  if (['off', 'false', '0', 'no'].includes(raw)) return false;
  throw new ConfigError(name, `must be on or off, got "${env[name]}"`);
}

function secret(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (!raw) return undefined;
  if (raw.length < 32) throw new ConfigError(name, 'must be at least 32 characters');
  return raw;
}

function url(env: Env, name: string, schemes: string[]): string | null {
  const raw = env[name]?.trim();
  if (!raw) return null;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(name, `is not a URL (expected ${schemes.map((s) => `${s}//…`).join(' or ')})`);
  }
  if (!schemes.includes(parsed.protocol)) {
    throw new ConfigError(name, `must start with ${schemes.map((s) => `${s}//`).join(' or ')}, got ${parsed.protocol}//`);
  }
  return raw;
}

function networks(env: Env, name: string): Network[] {
  try {
    return parseNetworks(env[name] ?? '');
  } catch (error) {
    if (error instanceof NetworkListError) throw new ConfigError(name, error.message);
    throw error;
  }
}

/** One Redis URL; with REDIS_CLUSTER, one or more of the cluster's nodes, comma-separated. */
function redisUrl(env: Env, cluster: boolean): string | null {
  const raw = env.REDIS_URL?.trim();
  if (!raw) {
    if (cluster) throw new ConfigError('REDIS_URL', 'must name one or more nodes of the cluster (REDIS_CLUSTER is on)');
    return null;
  }
  const nodes = raw.split(',').map((node) => node.trim());
  if (nodes.length > 1 && !cluster) {
    throw new ConfigError('REDIS_URL', 'names several servers: set REDIS_CLUSTER=true if they are nodes of a Redis Cluster');
  }
  for (const node of nodes) url({ REDIS_URL: node }, 'REDIS_URL', ['redis:', 'rediss:']);
  return nodes.join(',');
}

function eventStoreUrl(env: Env): string | null {
  const raw = env.EVENTSTORE_URL?.trim();
  if (!raw) return null;
  try {
    return parseEventStoreUrl(raw).connectionString;
  } catch (error) {
    if (error instanceof EventStoreUrlError) throw new ConfigError('EVENTSTORE_URL', error.message);
    throw error;
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

function logLevel(env: Env): string {
  const raw = env.LOG_LEVEL?.trim().toLowerCase();
  if (!raw) return 'info';
  if (!LOG_LEVELS.includes(raw))
    throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  return raw;
}

export function loadConfig(env: Env = process.env): Config {
  const requestTimeoutMs = integer(env, 'REQUEST_TIMEOUT_MS', 600_000, 1_000, 3_600_000);
  const reservationTtlMs = integer(env, 'RESERVATION_TTL_MS', requestTimeoutMs + 300_000, 100, 86_400_000);
  if (reservationTtlMs <= requestTimeoutMs && env.RESERVATION_TTL_MS) {
    throw new ConfigError('RESERVATION_TTL_MS', `must be longer than REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  }
  const host = (env.HOST ?? '0.0.0.0').trim();
  if (!host) throw new ConfigError('HOST', 'must not be empty');
  const port = integer(env, 'PORT', 8080, 0, 65_535);
  const simulatedHostPort =
    env.SIMULATED_HOST_PORT?.trim() === 'off' ? null : integer(env, 'SIMULATED_HOST_PORT', 8091, 0, 65_535);
  // The simulated host listens beside the service: on one port, the second to listen would fail
  // with an EADDRINUSE that does not say the other is the service's own.
  if (simulatedHostPort !== null && simulatedHostPort !== 0 && simulatedHostPort === port) {
    throw new ConfigError(
      'SIMULATED_HOST_PORT',
      `is ${port}, the service's PORT too: give one of them another port (or SIMULATED_HOST_PORT=off without the simulated host)`,
    );
  }
  const redisPrefix = env.REDIS_PREFIX ?? 'mg:';
  if (!/^[\w:.-]{1,64}$/.test(redisPrefix)) {
    throw new ConfigError('REDIS_PREFIX', 'must be 1 to 64 letters, digits, or _ : . -');
  }
  return {
    port,
    host,
    dataDir: resolve(env.DATA_DIR?.trim() || './data'),
    redisUrl: redisUrl(env, onOff(env, 'REDIS_CLUSTER', false)),
    redisCluster: onOff(env, 'REDIS_CLUSTER', false),
    redisPrefix,
    redisConnectTimeoutMs: integer(env, 'REDIS_CONNECT_TIMEOUT_MS', 10_000, 100, 600_000),
    eventStoreUrl: eventStoreUrl(env),
    workers: env.WORKERS?.trim().toLowerCase() === 'auto' ? availableParallelism() : integer(env, 'WORKERS', 1, 1, 256),
    requestTimeoutMs,
    shutdownGraceMs: integer(env, 'SHUTDOWN_GRACE_MS', 30_000, 0, 3_600_000),
    shutdownDrainMs: integer(env, 'SHUTDOWN_DRAIN_MS', 0, 0, 600_000),
    otlpEndpoint: url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']),
    metricsPort: env.METRICS_PORT?.trim() ? integer(env, 'METRICS_PORT', 9464, 0, 65_535) : null,
    requestReadTimeoutMs: integer(env, 'REQUEST_READ_TIMEOUT_MS', 60_000, 100, 3_600_000),
    reservationTtlMs,
    pendingHoldMs: integer(env, 'PENDING_HOLD_MS', 60_000, 100, 3_600_000),
    // At most LONGEST_LEASE_MS (runtime/log-claim.decisions.ts): how far back a claim's judge reads.
    servingLeaseMs: integer(env, 'SERVING_LEASE_MS', 30_000, 1_000, 300_000),
    sweepIntervalMs: integer(env, 'SWEEP_INTERVAL_MS', 1_000, 10, 600_000),
    progressIntervalMs: integer(env, 'PROGRESS_INTERVAL_MS', 2_000, 100, 600_000),
    hostedToolMaxUses: integer(env, 'HOSTED_TOOL_MAX_USES', 20, 1, 1_000),
    requestLogRetention: integer(env, 'REQUEST_LOG_RETENTION', 10_000, 1, 10_000_000),
    logPollMs: integer(env, 'LOG_POLL_MS', 100, 5, 10_000),
    cataloguePath: resolve(env.CATALOGUE_PATH?.trim() || DEFAULT_CATALOGUE),
    simulatedHostPort,
    hostFirstByteTimeoutMs: integer(env, 'HOST_FIRST_BYTE_TIMEOUT_MS', 120_000, 100, 3_600_000),
    hostBreakerFailures: integer(env, 'HOST_BREAKER_FAILURES', DEFAULT_BREAKER.failures, 0, 1_000),
    hostBreakerCooldownMs: integer(env, 'HOST_BREAKER_COOLDOWN_MS', DEFAULT_BREAKER.cooldownMs, 100, 3_600_000),
    sseKeepAliveMs: integer(env, 'SSE_KEEPALIVE_MS', 15_000, 10, 600_000),
    minPositionWaitMs: integer(env, 'MIN_POSITION_WAIT_MS', 5_000, 0, 60_000),
    bodyLimitBytes: integer(env, 'BODY_LIMIT_BYTES', 4 * 1024 * 1024, 1024, 512 * 1024 * 1024),
    dashboardSignup: onOff(env, 'DASHBOARD_SIGNUP', true),
    publicBaseUrl: url(env, 'PUBLIC_BASE_URL', ['http:', 'https:'])?.replace(/\/+$/, '') ?? null,
    dashboardSecret: secret(env, 'DASHBOARD_SECRET'),
    logLevel: logLevel(env),
    logPretty: onOff(env, 'LOG_PRETTY', false),
    metrics: onOff(env, 'METRICS', true),
    stickyRouting: onOff(env, 'STICKY_ROUTING', true),
    alertAttemptTimeoutMs: integer(env, 'ALERT_ATTEMPT_TIMEOUT_MS', 10_000, 100, 300_000),
    alertRetryBaseMs: integer(env, 'ALERT_RETRY_BASE_MS', 5_000, 10, 3_600_000),
    alertMaxAttempts: integer(env, 'ALERT_MAX_ATTEMPTS', 10, 1, 100),
    alertWebhookAllowCidrs: networks(env, 'ALERT_WEBHOOK_ALLOW_CIDRS'),
    alertTestIntervalMs: integer(env, 'ALERT_TEST_INTERVAL_MS', 10_000, 0, 3_600_000),
  };
}
