/**
 * Alerts' events. An organization's settings are on its alerts stream (`alerts-<orgId>`); each alert's
 * delivery is on a stream of its own (`alert-<alertId>`), where instances claim it with an expected
 * revision (one wins) and record how each attempt ended. The alerts themselves are never written:
 * every instance derives them from the log (see alerts.decisions.ts), each with the same id.
 * No secret ever appears here: the signing secret is derived from the server's secret and `secretId`.
 */

/** The organization's alerts, as set (all of them at once). Amounts in nano-credits; null: that alert is off. */
export interface AlertsConfigured {
  type: 'AlertsConfigured';
  data: {
    orgId: string;
    url: string;
    /** The balance falling below this. */
    balanceBelow: number | null;
    /** A UTC day's settled charges rising above this. */
    daySpendAbove: number | null;
    /** A key's spend reaching 80 % and 100 % of its credit limit. */
    keyLimits: boolean;
    /** Who set them: a management key's id or a dashboard user's id. */
    by: string;
    configuredAt: number;
  };
}

/** A new signing secret (the one before stops signing): derived from the server's secret and this random id. */
export interface AlertsSecretIssued {
  type: 'AlertsSecretIssued';
  data: { orgId: string; secretId: string; by: string; issuedAt: number };
}

/** No more alerts for the organization (those not yet delivered are dropped). */
export interface AlertsTurnedOff {
  type: 'AlertsTurnedOff';
  data: { orgId: string; by: string; turnedOffAt: number };
}

/** A test alert asked for: delivered like any other. */
export interface AlertTestRequested {
  type: 'AlertTestRequested';
  data: { orgId: string; by: string; requestedAt: number };
}

export type AlertsSettingsEvent = AlertsConfigured | AlertsSecretIssued | AlertsTurnedOff | AlertTestRequested;

/** An instance takes an attempt at delivering an alert, until `leaseUntil`: past it, another may. */
export interface AlertClaimed {
  type: 'AlertClaimed';
  data: { alertId: string; orgId: string; instance: string; attempt: number; claimedAt: number; leaseUntil: number };
}

/** An attempt that failed and will be tried again from `nextAttemptAt` (backoff with jitter, drawn once, here). */
export interface AlertAttemptFailed {
  type: 'AlertAttemptFailed';
  data: {
    alertId: string;
    orgId: string;
    attempt: number;
    /** The receiver's status; null when it answered none (`timeout`, `connection`). */
    status: number | null;
    reason: 'status' | 'timeout' | 'connection';
    failedAt: number;
    nextAttemptAt: number;
  };
}

export interface AlertDelivered {
  type: 'AlertDelivered';
  data: { alertId: string; orgId: string; attempt: number; status: number; deliveredAt: number };
}

/**
 * Given up: the attempts' bound reached, a status not worth retrying (4xx but 408 and 429), a
 * destination alerts may not reach (a loopback, private or link-local address), or the alerts turned off.
 */
export interface AlertAbandoned {
  type: 'AlertAbandoned';
  data: {
    alertId: string;
    orgId: string;
    attempts: number;
    status: number | null;
    reason: 'attempts_exhausted' | 'refused' | 'forbidden_destination' | 'turned_off';
    abandonedAt: number;
  };
}

export type AlertDeliveryEvent = AlertClaimed | AlertAttemptFailed | AlertDelivered | AlertAbandoned;

export const alertsStream = (orgId: string) => `alerts-${orgId}`;
export const alertStream = (alertId: string) => `alert-${alertId}`;
