import { randomUUID } from 'node:crypto';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { type Agent, request } from 'undici';
import type { EventStore } from '../eventstore/event-store';
import {
  type AlertsState,
  alertBody,
  attemptOutcome,
  dueAlerts,
  evolveAlerts,
  initialAlertsState,
  type PendingAlert,
  type RetryPolicy,
} from './alerts.decisions';
import { type AlertDeliveryEvent, alertStream } from './alerts.events';
import { type AlertsCheckpoint, AlertsSnapshotFile } from './alerts-snapshot';
import { type AlertSecrets, signedHeaders } from './signing';
import { forbiddenDestinationOf, type WebhookDestinations } from './webhook-destinations';

/** Attempts one instance has in flight at most. */
const MAX_IN_FLIGHT = 16;
/** Once caught up with the log, the pause between two batches of it (see follow). */
const FOLLOW_PAUSE_MS = 25;

export interface DeliverySettings {
  /** The longest an attempt may take, from the request's start to the end of the receiver's answer. */
  attemptTimeoutMs: number;
  retry: RetryPolicy;
  /** How often due alerts (a backoff over, a claim lapsed) are looked for. */
  tickMs: number;
  /** Where the state is saved, at most every `everyMs` and on stop, for the next start to fold only the events after it. */
  snapshot: { file: string; everyMs: number } | null;
  /** The addresses webhooks may reach, checked on every connection (loopback, private… only where the operator allows). */
  destinations: WebhookDestinations;
}

/** Deliveries made by this instance since it started, by how each attempt ended (for the metrics). */
export interface DeliveryCounts {
  delivered: number;
  failed: number;
  abandoned: number;
}

/**
 * Delivers the alerts the log gives (see alerts.decisions.ts): it follows the whole log, in order,
 * and once it has caught up with it, claims each due alert on the alert's own stream (an append at
 * the revision it has seen: of several instances, one wins; the others see its claim and leave it),
 * POSTs it signed, and records how the attempt ended. A claim stands for the attempt's timeout and
 * a margin: if its instance dies (SIGKILL) before recording the end, any instance (it too, restarted)
 * claims the alert again once the claim lapses. Receivers may see an alert twice (the dead instance
 * may have delivered it), always with the same `webhook-id`. It starts from its saved state
 * (alerts-snapshot.ts) when the log still holds what that state was folded from.
 */
export class AlertDelivery {
  private state: AlertsState = initialAlertsState();
  /** The last event folded into `state` (none: position 0). */
  private checkpoint: AlertsCheckpoint = { position: 0, last: { streamId: '', revision: -1 } };
  private snapshot: AlertsSnapshotFile | null = null;
  private readonly instance = randomUUID();
  private readonly stopping = new AbortController();
  private readonly inFlight = new Map<string, Promise<void>>();
  private following: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  /** Alerts are delivered once the fold has reached the log's head as it was at the start. */
  private caughtUp = false;
  readonly counts: DeliveryCounts = { delivered: 0, failed: 0, abandoned: 0 };
  /** The connections to receivers: only to the addresses webhooks may reach. */
  private readonly dispatcher: Agent;

  constructor(
    private readonly events: EventStore,
    private readonly secrets: AlertSecrets,
    private readonly settings: DeliverySettings,
    private readonly log: (line: string) => void,
  ) {
    this.dispatcher = settings.destinations.dispatcher(settings.attemptTimeoutMs);
  }

  async start(): Promise<void> {
    const saving = this.settings.snapshot;
    if (saving) {
      this.snapshot = new AlertsSnapshotFile(saving.file, await this.events.logId(), saving.everyMs, this.log);
      const saved = await this.snapshot.load(this.events);
      if (saved) ({ state: this.state, checkpoint: this.checkpoint } = saved);
    }
    const head = await this.events.headPosition();
    if (this.checkpoint.position >= head) this.caughtUp = true;
    this.following = this.follow(head);
    this.timer = setInterval(() => this.deliverDue(), this.settings.tickMs);
    this.timer.unref();
  }

  /**
   * Folds the log in order from the checkpoint (0: its start); a subscription that fails (the log
   * unreachable) is taken up again where it was, a second later.
   */
  private async follow(head: number): Promise<void> {
    while (!this.stopping.signal.aborted) {
      try {
        for await (const batch of this.events.subscribe(this.checkpoint.position, this.stopping.signal)) {
          if (batch.length === 0) continue;
          for (const event of batch) evolveAlerts(this.state, event);
          const { position, streamId, revision } = batch[batch.length - 1];
          this.checkpoint = { position, last: { streamId, revision } };
          if (position >= head) this.caughtUp = true;
          this.deliverDue();
          await this.snapshot?.saveIfDue(this.state, this.checkpoint);
          // Caught up, the next batch is taken a moment later: every append would otherwise wake the
          // follower for its one or two events; an alert leaves at most FOLLOW_PAUSE_MS later for it.
          // Behind, requests get a turn between batches: a log read on this thread (SQLite) would
          // otherwise hold them all until the fold reaches the head (seconds, from the start of a long log).
          if (this.caughtUp) await sleep(FOLLOW_PAUSE_MS, undefined, { signal: this.stopping.signal });
          else await nextTurn();
        }
      } catch (error) {
        if (this.stopping.signal.aborted) return;
        this.log(`alerts: following the log failed (${(error as Error).message}); again in a second`);
        await new Promise<void>((resolve) => {
          const again = setTimeout(resolve, 1_000);
          this.stopping.signal.addEventListener(
            'abort',
            () => {
              clearTimeout(again);
              resolve();
            },
            { once: true },
          );
        });
      }
    }
  }

  /** Stops following and delivering; an attempt in flight is cut (its claim lapses; it is tried again). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.stopping.abort();
    await this.following;
    // Nothing is folded any more: the state saved is the one at the checkpoint.
    await Promise.all([this.snapshot?.save(this.state, this.checkpoint), ...this.inFlight.values()]);
    // Stopped twice (a test's cleanup after its own stop), the second finds it destroyed already.
    await this.dispatcher.destroy().catch(() => undefined);
  }

  private deliverDue(): void {
    if (!this.caughtUp || this.stopping.signal.aborted) return;
    for (const pending of dueAlerts(this.state, Date.now())) {
      const id = pending.alert.id;
      if (this.inFlight.has(id)) continue;
      // A backlog (a receiver down for hours) goes out a few at a time; the rest wait for the next tick.
      if (this.inFlight.size >= MAX_IN_FLIGHT) return;
      const attempt = this.attempt(pending)
        .catch((error: Error) => this.log(`alerts: delivering ${id}: ${error.message}`))
        .finally(() => this.inFlight.delete(id));
      this.inFlight.set(id, attempt);
    }
  }

  /** Appends to the alert's stream after `revision`; false when another instance wrote there first (or it is unknown whether it went in). */
  private async record(alertId: string, revision: number, event: AlertDeliveryEvent): Promise<number | null> {
    try {
      const appended = await this.events.append(alertStream(alertId), [event], revision < 0 ? 'no_stream' : revision);
      return appended.nextExpectedRevision;
    } catch {
      // Another instance's claim or end (or an outcome unknown): the log will say, as the fold follows it.
      return null;
    }
  }

  private async attempt(pending: PendingAlert): Promise<void> {
    const { alert } = pending;
    const base = { alertId: alert.id, orgId: alert.orgId };
    const settings = this.state.orgs.get(alert.orgId)?.settings ?? null;
    const attempt = pending.attempts + 1;
    const now = Date.now();
    if (settings === null || settings.secretId === null) {
      await this.record(alert.id, pending.revision, {
        type: 'AlertAbandoned',
        data: { ...base, attempts: pending.attempts, status: null, reason: 'turned_off', abandonedAt: now },
      });
      return;
    }
    if (attempt > this.settings.retry.maxAttempts) {
      // Its last attempt's instance died before recording how it ended.
      const abandoned = await this.record(alert.id, pending.revision, {
        type: 'AlertAbandoned',
        data: { ...base, attempts: pending.attempts, status: null, reason: 'attempts_exhausted', abandonedAt: now },
      });
      if (abandoned !== null) this.counts.abandoned++;
      return;
    }
    // A claim outlasts the attempt's timeout, so that no other instance starts one while this one may still deliver.
    const leaseUntil = now + this.settings.attemptTimeoutMs * 2 + 1_000;
    const claimed = await this.record(alert.id, pending.revision, {
      type: 'AlertClaimed',
      data: { ...base, instance: this.instance, attempt, claimedAt: now, leaseUntil },
    });
    if (claimed === null) return;
    const answer = await this.post(
      settings.url,
      this.secrets.secretFor(alert.orgId, settings.secretId),
      alert.id,
      alertBody(alert),
    );
    if (answer === null) return; // stopping: the claim lapses and the alert is tried again
    if ('failure' in answer && answer.failure === 'forbidden')
      this.log(`alerts: ${alert.id} not sent: ${answer.why} (ALERT_WEBHOOK_ALLOW_CIDRS allows networks)`);
    const ended = Date.now();
    const outcome = attemptOutcome(answer, attempt, this.settings.retry, ended, Math.random());
    const where = new URL(settings.url).host;
    switch (outcome.kind) {
      case 'delivered':
        if (
          (await this.record(alert.id, claimed, {
            type: 'AlertDelivered',
            data: { ...base, attempt, status: outcome.status, deliveredAt: ended },
          })) !== null
        )
          this.counts.delivered++;
        return;
      case 'retry':
        this.counts.failed++;
        this.log(
          `alerts: ${alert.id} to ${where}: attempt ${attempt} failed (${outcome.status ?? outcome.reason}), again from ${new Date(outcome.nextAttemptAt).toISOString()}`,
        );
        await this.record(alert.id, claimed, {
          type: 'AlertAttemptFailed',
          data: {
            ...base,
            attempt,
            status: outcome.status,
            reason: outcome.reason,
            failedAt: ended,
            nextAttemptAt: outcome.nextAttemptAt,
          },
        });
        return;
      case 'abandon':
        this.counts.failed++;
        this.counts.abandoned++;
        this.log(
          `alerts: ${alert.id} to ${where}: given up after attempt ${attempt} (${outcome.reason}, status ${outcome.status ?? 'none'})`,
        );
        await this.record(alert.id, claimed, {
          type: 'AlertAbandoned',
          data: { ...base, attempts: attempt, status: outcome.status, reason: outcome.reason, abandonedAt: ended },
        });
    }
  }

  /** One POST: the receiver's status, or why it gave none; null when this instance is stopping. */
  private async post(
    url: string,
    secret: string,
    id: string,
    body: string,
  ): Promise<{ status: number } | { failure: 'timeout' | 'connection' } | { failure: 'forbidden'; why: string } | null> {
    const timeout = AbortSignal.timeout(this.settings.attemptTimeoutMs);
    try {
      const answer = await request(url, {
        dispatcher: this.dispatcher,
        method: 'POST',
        headers: { 'content-type': 'application/json', ...signedHeaders(secret, id, Math.floor(Date.now() / 1000), body) },
        body,
        signal: AbortSignal.any([timeout, this.stopping.signal]),
      });
      await answer.body.dump();
      return { status: answer.statusCode };
    } catch (error) {
      if (this.stopping.signal.aborted) return null;
      const forbidden = forbiddenDestinationOf(error);
      if (forbidden) return { failure: 'forbidden', why: forbidden.why };
      return { failure: timeout.aborted ? 'timeout' : 'connection' };
    }
  }
}
