import { Inject, Injectable } from '@nestjs/common';
import { type EventStore, WrongExpectedRevisionError } from '../eventstore/event-store';
import { ApiError } from '../http/api-error';
import { formatCredits, parseCredits } from '../ledger/money';
import { CONFIG, EVENTS } from '../runtime/runtime.module';
import type { Config } from '../config/config';
import { type AlertsSettingsEvent, alertsStream } from './alerts.events';
import { AlertSecrets, newSecretId } from './signing';
import { WebhookDestinations } from './webhook-destinations';

/** What an organization asks to be alerted of. Amounts in nano-credits; null: that alert is off. */
export interface AlertsAsked {
  url: string;
  balanceBelow: number | null;
  daySpendAbove: number | null;
  keyLimits: boolean;
}

/** The settings as shown (never the secret): credits as decimal text. */
export interface AlertsView {
  url: string;
  balance_below: string | null;
  day_spend_above: string | null;
  key_limits: boolean;
  secret_issued_at: string;
  configured_at: string;
}

interface Settings extends AlertsAsked {
  secretId: string;
  secretIssuedAt: number;
  configuredAt: number;
}

const MAX_URL = 2048;

/** When the organization's last test alert was asked for (0: never), turned off and on meanwhile or not. */
const lastTestOf = (events: AlertsSettingsEvent[]): number =>
  events.reduce((last, e) => (e.type === 'AlertTestRequested' ? Math.max(last, e.data.requestedAt) : last), 0);

/** The settings an organization's alerts stream holds now, and its revision. */
function settingsOf(events: AlertsSettingsEvent[]): Settings | null {
  let settings: Settings | null = null;
  for (const event of events) {
    switch (event.type) {
      case 'AlertsConfigured': {
        const { url, balanceBelow, daySpendAbove, keyLimits, configuredAt } = event.data;
        settings = {
          ...(settings ?? { secretId: '', secretIssuedAt: 0 }),
          url,
          balanceBelow,
          daySpendAbove,
          keyLimits,
          configuredAt,
        };
        break;
      }
      case 'AlertsSecretIssued':
        if (settings) Object.assign(settings, { secretId: event.data.secretId, secretIssuedAt: event.data.issuedAt });
        break;
      case 'AlertsTurnedOff':
        settings = null;
        break;
    }
  }
  return settings;
}

const viewOf = (s: Settings): AlertsView => ({
  url: s.url,
  balance_below: s.balanceBelow === null ? null : formatCredits(s.balanceBelow),
  day_spend_above: s.daySpendAbove === null ? null : formatCredits(s.daySpendAbove),
  key_limits: s.keyLimits,
  secret_issued_at: new Date(s.secretIssuedAt).toISOString(),
  configured_at: new Date(s.configuredAt).toISOString(),
});

/** A webhook URL: http(s), absolute, of a sensible length. Its text is never echoed in an error (it may hold a token). */
export function checkUrl(url: unknown): string {
  if (typeof url !== 'string' || url.length === 0 || url.length > MAX_URL) {
    throw new ApiError('invalid_request', `url must be an http or https URL of at most ${MAX_URL} characters`, { param: 'url' });
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new ApiError('invalid_request', 'url is not a valid absolute URL', { param: 'url' });
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ApiError('invalid_request', 'url must use http or https', { param: 'url' });
  }
  return url;
}

/** An amount of credits as JSON or a form gives it (a number or decimal text, above 0), null, or absent (null). */
export function creditsOf(value: unknown, param: string): number | null {
  if (value === null || value === undefined || value === '') return null;
  let text: string;
  if (typeof value === 'number' && Number.isFinite(value)) {
    // As decimal text (String(5e-7) would be "5e-7"); more than 9 decimals do not survive the round trip.
    text = value.toFixed(9);
    if (Number(text) !== value)
      throw new ApiError('invalid_request', `${param}: an amount of credits has at most 9 decimals`, { param });
  } else if (typeof value === 'string') text = value.trim();
  else throw new ApiError('invalid_request', `${param} must be an amount of credits, or null`, { param });
  let nano: number;
  try {
    nano = parseCredits(text);
  } catch (error) {
    throw new ApiError('invalid_request', `${param}: ${(error as Error).message}`, { param });
  }
  if (nano <= 0) throw new ApiError('invalid_request', `${param} must be above 0, or null`, { param });
  return nano;
}

/**
 * An organization's alerts settings, as commands on its alerts stream (decided on what the stream
 * holds, appended at the revision read: two writers at once, one is decided again). The management
 * API and the dashboard both come here; the delivery worker reads the same events from the log.
 */
@Injectable()
export class AlertsService {
  private readonly secrets: AlertSecrets;
  private readonly destinations: WebhookDestinations;
  private readonly testIntervalMs: number;

  constructor(
    @Inject(EVENTS) private readonly events: EventStore,
    @Inject(CONFIG) config: Config,
  ) {
    this.secrets = AlertSecrets.fromEnvironment(config.dataDir, config.dashboardSecret);
    this.destinations = new WebhookDestinations(config.alertWebhookAllowCidrs);
    this.testIntervalMs = config.alertTestIntervalMs;
  }

  private async decide<T>(
    orgId: string,
    decide: (
      settings: Settings | null,
      stream: AlertsSettingsEvent[],
    ) => { events: AlertsSettingsEvent[]; result: (position: number) => T },
  ): Promise<T> {
    for (let tries = 0; ; tries++) {
      const stream = (await this.events.readStream(alertsStream(orgId))) as unknown as (AlertsSettingsEvent & {
        revision: number;
      })[];
      const { events, result } = decide(settingsOf(stream), stream);
      const revision = stream.length === 0 ? 'no_stream' : stream[stream.length - 1].revision;
      try {
        const { position } = await this.events.append(alertsStream(orgId), events, revision);
        return result(position);
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError) || tries >= 3) throw error;
      }
    }
  }

  async read(orgId: string): Promise<AlertsView | null> {
    const settings = settingsOf((await this.events.readStream(alertsStream(orgId))) as unknown as AlertsSettingsEvent[]);
    return settings && viewOf(settings);
  }

  /** Sets every alert at once. The first time (or after turning off), a secret is issued: shown in the answer, this once. */
  configure(orgId: string, by: string, asked: AlertsAsked, now = Date.now()): Promise<{ alerts: AlertsView; secret?: string }> {
    // An address webhooks may not reach is refused now; a name's addresses, when each delivery connects.
    const refused = this.destinations.urlRefusal(asked.url);
    if (refused !== null) {
      throw new ApiError(
        'invalid_request',
        `url: ${refused}, which alerts are not sent to (the operator may allow its network: ALERT_WEBHOOK_ALLOW_CIDRS)`,
        { param: 'url' },
      );
    }
    return this.decide(orgId, (settings) => {
      const configured: AlertsSettingsEvent = { type: 'AlertsConfigured', data: { orgId, ...asked, by, configuredAt: now } };
      if (settings) {
        const next = { ...settings, ...asked, configuredAt: now };
        return { events: [configured], result: () => ({ alerts: viewOf(next) }) };
      }
      const secretId = newSecretId();
      const issued: AlertsSettingsEvent = { type: 'AlertsSecretIssued', data: { orgId, secretId, by, issuedAt: now } };
      const next = { ...asked, secretId, secretIssuedAt: now, configuredAt: now };
      return {
        events: [configured, issued],
        result: () => ({ alerts: viewOf(next), secret: this.secrets.secretFor(orgId, secretId) }),
      };
    });
  }

  /** A new signing secret, shown in the answer this once; the one before stops signing at once. */
  rotateSecret(orgId: string, by: string, now = Date.now()): Promise<{ secret: string }> {
    return this.decide(orgId, (settings) => {
      if (!settings) throw notConfigured();
      const secretId = newSecretId();
      return {
        events: [{ type: 'AlertsSecretIssued', data: { orgId, secretId, by, issuedAt: now } }],
        result: () => ({ secret: this.secrets.secretFor(orgId, secretId) }),
      };
    });
  }

  turnOff(orgId: string, by: string, now = Date.now()): Promise<void> {
    return this.decide(orgId, (settings) => {
      if (!settings) throw notConfigured();
      return { events: [{ type: 'AlertsTurnedOff', data: { orgId, by, turnedOffAt: now } }], result: () => undefined };
    });
  }

  /**
   * A test alert, delivered like the others: its id (the receiver's `webhook-id`). At most one per
   * `ALERT_TEST_INTERVAL_MS` (10 s) for an organization, decided on its stream (so on every instance
   * at once): the next earlier is a 429 saying when (Retry-After), nothing sent.
   */
  sendTest(orgId: string, by: string, now = Date.now()): Promise<{ alert_id: string }> {
    return this.decide(orgId, (settings, stream) => {
      if (!settings) throw notConfigured();
      // Bounded by the interval: an instance whose clock runs ahead cannot hold the others back longer.
      const waitMs = Math.min(this.testIntervalMs, lastTestOf(stream) + this.testIntervalMs - now);
      if (this.testIntervalMs > 0 && waitMs > 0) {
        const retryAfterSeconds = Math.ceil(waitMs / 1000);
        throw new ApiError(
          'rate_limited',
          `a test alert was sent less than ${this.testIntervalMs / 1000} s ago: try again in ${retryAfterSeconds} s`,
          { retryAfterSeconds },
          { 'retry-after': String(retryAfterSeconds) },
        );
      }
      return {
        events: [{ type: 'AlertTestRequested', data: { orgId, by, requestedAt: now } }],
        result: (position) => ({ alert_id: `al_${position}_test` }),
      };
    });
  }
}

const notConfigured = () => new ApiError('not_found', 'alerts are not configured for this organization');
