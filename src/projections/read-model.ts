import type { RecordedEvent } from '../eventstore/event-store';
import type { ApiKeyCreated, ApiKeyRevoked, OrganizationCreated } from '../identity/identity.events';
import type {
  CreditsGranted,
  CreditsReserved,
  ReservationExpired,
  ReservationReleased,
  ReservationSettled,
} from '../ledger/ledger.events';

/** Amounts in nano-credits. `available = granted - spent - reserved - pending`. */
export interface Balance {
  granted: number;
  spent: number;
  /** Held by reservations recorded in the log and not yet resolved. */
  reserved: number;
  /** Held by admissions whose reservation event has not reached the log yet. */
  pending: number;
}

export const availableOf = (b: Balance): number => b.granted - b.spent - b.reserved - b.pending;

export interface OrgLedger {
  granted: number;
  spent: number;
  reserved: number;
  /** Position of the last event applied to this organization: applying is idempotent. */
  position: number;
}

export interface OpenReservation {
  reservationId: string;
  orgId: string;
  amount: number;
  expiresAt: number;
}

export interface KeyRecord {
  keyId: string;
  orgId: string;
  name: string;
  prefix: string;
  hash: string;
  createdAt: number;
  revokedAt: number | null;
}

export interface RequestLogEntry {
  requestId: string;
  reservationId: string;
  time: number;
  surface: string;
  model: string;
  host: string | null;
  keyId: string;
  inputTokens: number;
  outputTokens: number;
  /** Nano-credits charged (0 when released or expired). */
  cost: number;
  latencyMs: number | null;
  status: string;
}

export interface OrgRecord {
  orgId: string;
  name: string;
  createdAt: number;
}

type ProjectedEvent =
  | CreditsGranted
  | CreditsReserved
  | ReservationSettled
  | ReservationReleased
  | ReservationExpired
  | OrganizationCreated
  | ApiKeyCreated
  | ApiKeyRevoked;

/** Narrows a recorded event to the ones the read models use. */
export const asProjected = (event: RecordedEvent): ProjectedEvent => event as unknown as ProjectedEvent;

export function requestLogEntryOf(event: ReservationSettled | ReservationReleased | ReservationExpired): RequestLogEntry {
  const d = event.data;
  const base = {
    requestId: d.requestId,
    reservationId: d.reservationId,
    surface: d.surface,
    model: d.model,
    keyId: d.keyId,
  };
  switch (event.type) {
    case 'ReservationSettled':
      return {
        ...base,
        time: event.data.settledAt,
        host: event.data.host,
        inputTokens: event.data.inputTokens,
        outputTokens: event.data.outputTokens,
        cost: event.data.amount,
        latencyMs: event.data.latencyMs,
        status: event.data.status,
      };
    case 'ReservationReleased':
      return {
        ...base,
        time: event.data.releasedAt,
        host: event.data.host,
        inputTokens: 0,
        outputTokens: 0,
        cost: 0,
        latencyMs: event.data.latencyMs,
        status: event.data.status,
      };
    case 'ReservationExpired':
      return {
        ...base,
        time: event.data.expiredAt,
        host: null,
        inputTokens: 0,
        outputTokens: 0,
        cost: 0,
        latencyMs: null,
        status: 'expired',
      };
  }
}

/**
 * Every read model in one in-memory fold of the log. It is what the in-process store serves,
 * what a rebuild computes before writing to Redis, and what the audit replays. `apply` does no
 * I/O and skips events at or before an organization's position, so applying twice is harmless.
 */
export class ReadModel {
  readonly orgs = new Map<string, OrgLedger>();
  readonly orgRecords = new Map<string, OrgRecord>();
  readonly open = new Map<string, OpenReservation>();
  readonly keysByHash = new Map<string, KeyRecord>();
  readonly keysById = new Map<string, KeyRecord>();
  readonly requests = new Map<string, RequestLogEntry[]>();
  position = 0;

  constructor(private readonly requestLogRetention: number) {}

  ledgerOf(orgId: string): OrgLedger {
    let ledger = this.orgs.get(orgId);
    if (!ledger) {
      ledger = { granted: 0, spent: 0, reserved: 0, position: 0 };
      this.orgs.set(orgId, ledger);
    }
    return ledger;
  }

  apply(recorded: RecordedEvent): void {
    if (recorded.position <= this.position) return;
    this.position = recorded.position;
    const event = asProjected(recorded);
    switch (event.type) {
      case 'OrganizationCreated':
        this.orgRecords.set(event.data.orgId, { ...event.data });
        this.ledgerOf(event.data.orgId);
        return;
      case 'ApiKeyCreated': {
        const record: KeyRecord = { ...event.data, revokedAt: null };
        this.keysByHash.set(record.hash, record);
        this.keysById.set(record.keyId, record);
        return;
      }
      case 'ApiKeyRevoked': {
        const record = this.keysById.get(event.data.keyId);
        if (record) record.revokedAt = event.data.revokedAt;
        return;
      }
      case 'CreditsGranted': {
        const ledger = this.ledgerOf(event.data.orgId);
        ledger.granted += event.data.amount;
        ledger.position = recorded.position;
        return;
      }
      case 'CreditsReserved': {
        const { reservationId, orgId, amount, expiresAt } = event.data;
        const ledger = this.ledgerOf(orgId);
        ledger.reserved += amount;
        ledger.position = recorded.position;
        this.open.set(reservationId, { reservationId, orgId, amount, expiresAt });
        return;
      }
      case 'ReservationSettled':
      case 'ReservationReleased':
      case 'ReservationExpired': {
        const ledger = this.ledgerOf(event.data.orgId);
        ledger.position = recorded.position;
        const open = this.open.get(event.data.reservationId);
        if (open) {
          ledger.reserved -= open.amount;
          this.open.delete(open.reservationId);
        }
        if (event.type === 'ReservationSettled') ledger.spent += event.data.amount;
        this.logRequest(event.data.orgId, requestLogEntryOf(event));
        return;
      }
    }
  }

  private logRequest(orgId: string, entry: RequestLogEntry): void {
    let log = this.requests.get(orgId);
    if (!log) {
      log = [];
      this.requests.set(orgId, log);
    }
    log.push(entry);
    // Trim in chunks so a long log is not shifted on every request.
    if (log.length > this.requestLogRetention * 1.25) log.splice(0, log.length - this.requestLogRetention);
  }

  /** Newest first. */
  recentRequests(orgId: string, limit: number): RequestLogEntry[] {
    const log = this.requests.get(orgId) ?? [];
    const newest = log.slice(Math.max(0, log.length - Math.min(limit, this.requestLogRetention)));
    return newest.reverse();
  }
}
