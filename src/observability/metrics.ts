import cluster from 'node:cluster';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { metricsOfTheSet, WORKER_INDEX_VARIABLE } from './cluster-metrics';
import type { RequestFacts } from './request-facts';

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

/** Where the gauges read what they show, when scraped. */
export interface MetricSources {
  /** Resolves when the read models' store answers (Redis, when configured), rejects when it does not. */
  storeAnswers?: () => Promise<unknown>;
  /** How many events the read models are behind the log. */
  lag?: () => Promise<number>;
  openStreams?: () => number;
  reservationsHeld?: () => Promise<number>;
  /** Reservations this instance has expired since it started. */
  reservationsExpired?: () => number;
  /** Sweeps this instance's sweeper failed since it started (a read models' store or log away). */
  sweepsFailed?: () => number;
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

/** Between a tally's label values in its keys (never in a model, host or status). */
const SEP = '\u0000';

/** A series' labels from its key (label values joined by SEP, in the order of the label names). */
function labelsOf(key: string, labelNames: readonly string[]): Record<string, string> {
  const values = key.split(SEP);
  const labels: Record<string, string> = {};
  labelNames.forEach((name, i) => (labels[name] = values[i]));
  return labels;
}

/**
 * A counter fed per request through a plain map: an increment adds to a number under one key
 * (its label values joined), and prom-client is handed the sums when scraped. prom-client would
 * otherwise build an object and hash its labels on every increment — a dozen per request.
 */
class Tally {
  private readonly series = new Map<string, { pending: number; shown: boolean }>();

  constructor(options: { name: string; help: string; labelNames: readonly string[]; registers: Registry[] }) {
    const series = this.series;
    const labelNames = options.labelNames;
    new Counter({
      ...options,
      collect() {
        for (const [key, entry] of series) {
          // A series appears once counted, even by 0 (as prom-client shows an increment of 0).
          if (entry.shown && entry.pending === 0) continue;
          this.inc(labelsOf(key, labelNames), entry.pending);
          entry.pending = 0;
          entry.shown = true;
        }
      },
    });
  }

  /** Adds `n` to the series of the label values in `key` (joined by SEP, in the order of the label names). */
  add(key: string, n = 1): void {
    const entry = this.series.get(key);
    if (entry === undefined) this.series.set(key, { pending: n, shown: false });
    else entry.pending += n;
  }
}

/** One series of a TalliedHistogram: its label values, observations per bucket (the last past every bound), their sum. */
interface HistogramSeries {
  labels: Record<string, string>;
  counts: number[];
  sum: number;
  count: number;
}

/**
 * A histogram fed per request through a plain map, as Tally feeds a counter: an observation finds
 * its series by one key and its bucket by a loop, and prom-client formats what it holds when scraped
 * (the samples a prom-client Histogram gives: cumulative `_bucket`s with `le`, `_sum`, `_count`).
 * prom-client's own would build a label object and hash it on every observation.
 */
export class TalliedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
    // Without labels its one series shows from the start, at 0 (as prom-client's does).
    if (labelNames.length === 0) this.seriesOf('');
  }

  private seriesOf(key: string): HistogramSeries {
    let series = this.series.get(key);
    if (series === undefined) {
      series = {
        labels: labelsOf(key, this.labelNames),
        counts: new Array<number>(this.bounds.length + 1).fill(0),
        sum: 0,
        count: 0,
      };
      this.series.set(key, series);
    }
    return series;
  }

  /** Observes `value` in the series of the label values in `key` (joined by SEP, in the order of the label names). */
  observe(key: string, value: number): void {
    const series = this.seriesOf(key);
    let bucket = 0;
    while (bucket < this.bounds.length && value > this.bounds[bucket]) bucket++;
    series.counts[bucket] += 1;
    series.sum += value;
    series.count += 1;
  }

  /** As prom-client's histogram gives them for text: `le` as the sample's label, the series' labels shared. */
  getForPromString() {
    type Sample = {
      labels: { le?: number | string };
      sharedLabels: Record<string, string>;
      value: number;
      metricName: string;
      exemplar?: null;
    };
    const values: Sample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const { labels, counts, sum, count } of this.series.values()) {
      let cumulative = 0;
      this.bounds.forEach((le, i) => {
        cumulative += counts[i];
        values.push({ labels: { le }, sharedLabels: labels, value: cumulative, metricName: bucket, exemplar: null });
      });
      values.push({ labels: { le: '+Inf' }, sharedLabels: labels, value: count, metricName: bucket, exemplar: null });
      values.push({ labels: {}, sharedLabels: labels, value: sum, metricName: `${this.name}_sum` });
      values.push({ labels: {}, sharedLabels: labels, value: count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** As prom-client's histogram gives them as JSON (what a worker set's primary sums): each sample's labels whole. */
  get() {
    const text = this.getForPromString();
    return {
      ...text,
      values: text.values.map(({ labels, sharedLabels, ...sample }) => ({ ...sample, labels: { ...labels, ...sharedLabels } })),
    };
  }

  reset(): void {
    this.series.clear();
  }
}

/** How long a scrape waits for a store a gauge reads (Redis, the event log) before leaving that gauge out. */
export const SCRAPE_READ_MS = 2_000;

/** `read`, or a rejection once SCRAPE_READ_MS have passed (a store that hangs never holds the scrape). */
function withinScrape<T>(read: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${SCRAPE_READ_MS} ms`)), SCRAPE_READ_MS);
  });
  return Promise.race([read, late]).finally(() => clearTimeout(timer));
}

/**
 * A gauge read from a store when scraped (the read models' store, the event log). A store that does
 * not answer leaves the gauge out of that scrape — no sample rather than a stale or made-up one —
 * and never fails the scrape: every other series is still served (`gateway_read_model_store_up`
 * says whether the read models' store answered). In a worker set, the highest of the workers'
 * (each reads the same log and store).
 */
class ReadGauge {
  readonly type = 'gauge';
  readonly aggregator = 'max';

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly read: () => Promise<number>,
    registry: Registry,
  ) {
    registry.registerMetric(this as unknown as Parameters<Registry['registerMetric']>[0]);
  }

  async get() {
    const value = await withinScrape(this.read()).catch(() => null);
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: value === null ? [] : [{ value, labels: {} }],
    };
  }

  reset(): void {}
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
    // The process's own (heap, RSS, event-loop lag, GC, open file descriptors, CPU): prom-client's
    // defaults. In a worker set, each worker's under a `worker` label (its place in the set, 1 to
    // WORKERS, kept across its restarts), so the primary's gathering keeps them apart instead of summing them.
    const worker = process.env[WORKER_INDEX_VARIABLE];
    collectDefaultMetrics({ register: this.registry, ...(cluster.isWorker && worker ? { labels: { worker } } : {}) });
    if (sources.routing) this.routingGauges(sources.routing);
    if (sources.storeAnswers) {
      const answers = sources.storeAnswers;
      new Gauge({
        name: 'gateway_read_model_store_up',
        help: 'Whether the read models store (Redis, when configured) answered this scrape: 1 yes, 0 no',
        registers,
        // A set is up when every worker's store answers.
        aggregator: 'min',
        async collect() {
          const up = await withinScrape(answers()).then(
            () => 1,
            () => 0,
          );
          this.set(up);
        },
      });
    }
    if (sources.lag) {
      new ReadGauge(
        'gateway_read_model_lag_events',
        'Events in the log not yet applied to this instance read models',
        sources.lag,
        this.registry,
      );
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
      new ReadGauge(
        'gateway_reservations_held',
        'Reservations recorded in the log and not yet settled, released or expired (every instance)',
        sources.reservationsHeld,
        this.registry,
      );
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
    if (sources.sweepsFailed) {
      const failed = sources.sweepsFailed;
      let counted = 0;
      new Counter({
        name: 'gateway_sweeps_failed_total',
        help: "Sweeps this instance's sweeper failed (reservations due not expired, pending holds not swept: their store or the log away)",
        registers,
        collect() {
          const total = failed();
          this.inc(total - counted);
          counted = total;
        },
      });
    }
  }

  private readonly appends = new TalliedHistogram(
    'gateway_event_log_append_seconds',
    'Time to append to the event log (durable when it returns)',
    [],
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    this.registry,
  );
  private readonly upstream = new TalliedHistogram(
    'gateway_upstream_duration_seconds',
    'Time of the call to the host that served (or last failed), from its start to its end',
    ['host'],
    SECONDS,
    this.registry,
  );

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

  private readonly attempts = new Tally({
    name: 'gateway_host_attempts_total',
    help: 'Host calls (retries included) and hosts passed over, by host, model and reason (ok, rate_limited, server_error, circuit_open, …)',
    labelNames: ['host', 'model', 'reason'] as const,
    registers: [this.registry],
  });

  /** One append to the event log, timed. */
  observeAppend(seconds: number): void {
    this.appends.observe('', seconds);
  }

  private readonly requests = new Tally({
    name: 'gateway_requests_total',
    help: 'Requests by surface, model, host and HTTP status',
    labelNames: ['surface', 'model', 'host', 'status'] as const,
    registers: [this.registry],
  });
  private readonly duration = new TalliedHistogram(
    'gateway_request_duration_seconds',
    'Time from a request arriving to its reply ending, by surface and model',
    ['surface', 'model'],
    SECONDS,
    this.registry,
  );
  private readonly ttft = new TalliedHistogram(
    'gateway_time_to_first_token_seconds',
    'Time from a request arriving to its first output, by host',
    ['host'],
    SECONDS,
    this.registry,
  );
  private readonly tokens = new Tally({
    name: 'gateway_tokens_total',
    help: 'Tokens billed, by class, model and host',
    labelNames: ['class', 'model', 'host'] as const,
    registers: [this.registry],
  });
  private readonly hostedToolUses = new Tally({
    name: 'gateway_hosted_tool_uses_total',
    help: 'Uses of tools hosts ran themselves (web searches…), billed per use, by class, model and host',
    labelNames: ['class', 'model', 'host'] as const,
    registers: [this.registry],
  });
  private readonly credits = new Tally({
    name: 'gateway_credits_charged_nano_total',
    help: 'Nano-credits charged (the settlements amounts), by model and host',
    labelNames: ['model', 'host'] as const,
    registers: [this.registry],
  });
  private readonly fallbacks = new Tally({
    name: 'gateway_fallbacks_total',
    help: 'Requests served by a later host after an earlier one failed, by model',
    labelNames: ['model'] as const,
    registers: [this.registry],
  });
  private readonly refusals = new Tally({
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
    const modelHost = model + SEP + host;
    this.requests.add(facts.surface + SEP + modelHost + SEP + status);
    this.duration.observe(facts.surface + SEP + model, latencyMs / 1000);
    if (facts.ttftMs !== undefined) this.ttft.observe(host, facts.ttftMs / 1000);
    if (facts.upstreamMs !== undefined) this.upstream.observe(host, facts.upstreamMs / 1000);
    if (facts.fallback === true) this.fallbacks.add(model);
    if (facts.attempts !== undefined) for (const a of facts.attempts) this.attempts.add(a.host + SEP + model + SEP + a.reason);
    // A known organization's (a key that does not serve is no organization's refusal).
    if (facts.host === undefined && facts.orgId !== undefined && facts.outcome !== undefined && status >= 400 && status < 500) {
      this.refusals.add(facts.outcome);
    }
    const usage = facts.usage;
    if (usage !== undefined) {
      this.tokens.add('input' + SEP + modelHost, usage.inputTokens);
      this.tokens.add('cache_read' + SEP + modelHost, usage.cacheReadTokens);
      this.tokens.add('cache_write_5m' + SEP + modelHost, usage.cacheWriteTokens);
      this.tokens.add('cache_write_1h' + SEP + modelHost, usage.cacheWrite1hTokens);
      this.tokens.add('output' + SEP + modelHost, usage.outputTokens);
      for (const [toolClass, n] of Object.entries(usage.hostedToolUses ?? {}))
        this.hostedToolUses.add(toolClass + SEP + modelHost, n);
    }
    if (facts.cost !== undefined) this.credits.add(modelHost, facts.cost);
  }

  text(): Promise<string> {
    return this.ofTheSet ? this.ofTheSet() : this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
