import cluster from 'node:cluster';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { metricsOfTheSet } from './cluster-metrics';
import type { RequestFacts } from './request-facts';

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** Where the gauges read what they show, when scraped. */
export interface MetricSources {
  /** How many events the read models are behind the log. */
  lag?: () => Promise<number>;
  openStreams?: () => number;
  reservationsHeld?: () => Promise<number>;
  /** Reservations this instance has expired since it started. */
  reservationsExpired?: () => number;
  /** Alerts' webhook attempts this instance made since it started, by how they ended. */
  alertDeliveries?: () => { delivered: number; failed: number; abandoned: number };
  /** Hosts' circuits as this instance saw them last, and their measured health over its window. */
  routing?: {
    circuits(): Promise<Array<{ host: string; model: string; phase: 'closed' | 'half_open' | 'open' }>>;
    health(): Array<{
      hostId: string;
      model: string;
      health: { errorRate: number; firstByteMs: number | null; outputTokensPerSecond: number | null };
    }>;
  };
}

/** A circuit's phase as the gauge shows it. */
const CIRCUIT_PHASES = { closed: 0, half_open: 1, open: 2 } as const;

/**
 * The service's Prometheus metrics (prom-client), fed from each request's facts when its reply
 * ends: a handful of label lookups per request, nothing per token.
 */
export class GatewayMetrics {
  readonly registry = new Registry();
  /** In a worker of a set (WORKERS > 1): the whole set's metrics, gathered by the primary. */
  private readonly ofTheSet = cluster.isWorker ? metricsOfTheSet(this.registry) : null;

  /** What the metrics ask for only when scraped (none is on the request path). */
  constructor(sources: MetricSources = {}) {
    const registers = [this.registry];
    if (sources.routing) this.routingGauges(sources.routing);
    if (sources.lag) {
      const lag = sources.lag;
      new Gauge({
        name: 'gateway_read_model_lag_events',
        help: 'Events in the log not yet applied to this instance read models',
        registers,
        aggregator: 'max',
        async collect() {
          this.set(await lag());
        },
      });
    }
    if (sources.openStreams) {
      const openStreams = sources.openStreams;
      new Gauge({
        name: 'gateway_open_streams',
        help: 'Streamed replies this instance is sending now',
        registers,
        collect() {
          this.set(openStreams());
        },
      });
    }
    if (sources.reservationsHeld) {
      const held = sources.reservationsHeld;
      new Gauge({
        name: 'gateway_reservations_held',
        help: 'Reservations recorded in the log and not yet settled, released or expired (every instance)',
        registers,
        // Every worker counts the same log's.
        aggregator: 'max',
        async collect() {
          this.set(await held());
        },
      });
    }
    if (sources.alertDeliveries) {
      const deliveries = sources.alertDeliveries;
      const counted = { delivered: 0, failed: 0, abandoned: 0 };
      new Counter({
        name: 'gateway_alert_deliveries_total',
        help: 'Alerts webhook attempts this instance made, by outcome: delivered, failed (tried again or given up), abandoned (given up)',
        labelNames: ['outcome'] as const,
        registers,
        collect() {
          const now = deliveries();
          for (const outcome of ['delivered', 'failed', 'abandoned'] as const) {
            this.inc({ outcome }, now[outcome] - counted[outcome]);
            counted[outcome] = now[outcome];
          }
        },
      });
    }
    if (sources.reservationsExpired) {
      const expired = sources.reservationsExpired;
      let counted = 0;
      new Counter({
        name: 'gateway_reservations_expired_total',
        help: 'Reservations this instance expired (never settled: a crash or a lost instance)',
        registers,
        collect() {
          const total = expired();
          this.inc(total - counted);
          counted = total;
        },
      });
    }
  }

  private readonly appends = new Histogram({
    name: 'gateway_event_log_append_seconds',
    help: 'Time to append to the event log (durable when it returns)',
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [this.registry],
  });
  private readonly upstream = new Histogram({
    name: 'gateway_upstream_duration_seconds',
    help: 'Time of the call to the host that served (or last failed), from its start to its end',
    labelNames: ['host'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });

  /** Hosts' circuits and measured health, read when scraped; a host and model gone from the window is dropped. */
  private routingGauges(routing: NonNullable<MetricSources['routing']>): void {
    const registers = [this.registry];
    const labelNames = ['host', 'model'] as const;
    new Gauge({
      name: 'gateway_host_circuit_state',
      help: 'A host circuit breaker for a model, as this instance last saw it: 0 closed, 1 half-open (probing), 2 open',
      labelNames,
      registers,
      aggregator: 'max',
      async collect() {
        const circuits = await routing.circuits();
        this.reset();
        for (const c of circuits) this.set({ host: c.host, model: c.model }, CIRCUIT_PHASES[c.phase]);
      },
    });
    const measured = (
      name: string,
      help: string,
      value: (h: ReturnType<typeof routing.health>[number]['health']) => number | null,
    ) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        // Each worker measures its own calls: a set shows their workers' mean.
        aggregator: 'average',
        collect() {
          this.reset();
          for (const { hostId, model, health } of routing.health()) {
            const v = value(health);
            if (v !== null) this.set({ host: hostId, model }, v);
          }
        },
      });
    measured(
      'gateway_host_first_byte_seconds',
      'Mean time from a host call to its first byte, over the last 5 minutes of this instance calls',
      (h) => (h.firstByteMs === null ? null : h.firstByteMs / 1000),
    );
    measured(
      'gateway_host_output_tokens_per_second',
      'Output tokens per second of generation, over the last 5 minutes of this instance calls',
      (h) => h.outputTokensPerSecond,
    );
    measured(
      'gateway_host_error_ratio',
      'Share of host calls that failed by the host fault, over the last 5 minutes of this instance calls',
      (h) => h.errorRate,
    );
  }

  private readonly attempts = new Counter({
    name: 'gateway_host_attempts_total',
    help: 'Host calls (retries included) and hosts passed over, by host, model and reason (ok, rate_limited, server_error, circuit_open, …)',
    labelNames: ['host', 'model', 'reason'] as const,
    registers: [this.registry],
  });

  /** One append to the event log, timed. */
  observeAppend(seconds: number): void {
    this.appends.observe(seconds);
  }

  private readonly requests = new Counter({
    name: 'gateway_requests_total',
    help: 'Requests by surface, model, host and HTTP status',
    labelNames: ['surface', 'model', 'host', 'status'] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'gateway_request_duration_seconds',
    help: 'Time from a request arriving to its reply ending, by surface and model',
    labelNames: ['surface', 'model'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });
  private readonly ttft = new Histogram({
    name: 'gateway_time_to_first_token_seconds',
    help: 'Time from a request arriving to its first output, by host',
    labelNames: ['host'] as const,
    buckets: SECONDS,
    registers: [this.registry],
  });
  private readonly tokens = new Counter({
    name: 'gateway_tokens_total',
    help: 'Tokens billed, by class, model and host',
    labelNames: ['class', 'model', 'host'] as const,
    registers: [this.registry],
  });
  private readonly hostedToolUses = new Counter({
    name: 'gateway_hosted_tool_uses_total',
    help: 'Uses of tools hosts ran themselves (web searches…), billed per use, by class, model and host',
    labelNames: ['class', 'model', 'host'] as const,
    registers: [this.registry],
  });
  private readonly credits = new Counter({
    name: 'gateway_credits_charged_nano_total',
    help: 'Nano-credits charged (the settlements amounts), by model and host',
    labelNames: ['model', 'host'] as const,
    registers: [this.registry],
  });
  private readonly fallbacks = new Counter({
    name: 'gateway_fallbacks_total',
    help: 'Requests served by a later host after an earlier one failed, by model',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  private readonly refusals = new Counter({
    name: 'gateway_refusals_total',
    help: 'Requests of a known organization refused before any host was called, by reason',
    labelNames: ['reason'] as const,
    registers: [this.registry],
  });

  /** One ended request. Requests that never reached the pipeline (no facts) count by status alone. */
  observe(facts: RequestFacts | null, status: number, latencyMs: number): void {
    if (facts === null || facts.surface === undefined) return;
    const model = facts.model ?? '';
    const host = facts.host ?? '';
    this.requests.inc({ surface: facts.surface, model, host, status: String(status) });
    this.duration.observe({ surface: facts.surface, model }, latencyMs / 1000);
    if (facts.ttftMs !== undefined) this.ttft.observe({ host }, facts.ttftMs / 1000);
    if (facts.upstreamMs !== undefined) this.upstream.observe({ host }, facts.upstreamMs / 1000);
    if (facts.fallback === true) this.fallbacks.inc({ model });
    if (facts.attempts !== undefined)
      for (const a of facts.attempts) this.attempts.inc({ host: a.host, model, reason: a.reason });
    if (facts.host === undefined && facts.outcome !== undefined && status >= 400 && status < 500) {
      this.refusals.inc({ reason: facts.outcome });
    }
    const usage = facts.usage;
    if (usage !== undefined) {
      this.tokens.inc({ class: 'input', model, host }, usage.inputTokens);
      this.tokens.inc({ class: 'cache_read', model, host }, usage.cacheReadTokens);
      this.tokens.inc({ class: 'cache_write_5m', model, host }, usage.cacheWriteTokens);
      this.tokens.inc({ class: 'cache_write_1h', model, host }, usage.cacheWrite1hTokens);
      this.tokens.inc({ class: 'output', model, host }, usage.outputTokens);
      for (const [toolClass, n] of Object.entries(usage.hostedToolUses ?? {}))
        this.hostedToolUses.inc({ class: toolClass, model, host }, n);
    }
    if (facts.cost !== undefined) this.credits.inc({ model, host }, facts.cost);
  }

  text(): Promise<string> {
    return this.ofTheSet ? this.ofTheSet() : this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
