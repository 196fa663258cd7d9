import type { HostedToolCounts } from '../ledger/money';
import type { MemberRole, RateLimits } from '../identity/identity.events';
import type { KeyRecord } from '../identity/key-lookup';
import type { HostAttempt, TokenClass } from '../ledger/ledger.events';

/**
 * The read side: what the read models answer, and the one way every reader asks (the API's
 * routes, the dashboard, the operator tool, the audit). Both stores answer it, from the same
 * folds of the log (folds.ts); a reader never sees which store it reads.
 */
export interface ReadModels {
  balance(orgId: string): Promise<Balance>;
  organization(orgId: string): Promise<OrgRecord | null>;
  /** The organizations a user belongs to. */
  organizationsOf(userId: string): Promise<OrgRecord[]>;
  /** An organization's members, oldest first. */
  membersOf(orgId: string): Promise<MemberRecord[]>;
  /** A user's membership of an organization, or null. */
  membership(orgId: string, userId: string): Promise<MemberRecord | null>;
  /** An organization's keys, each with its spend and last use. */
  keysOf(orgId: string): Promise<KeyRecord[]>;
  /** One key of an organization, with its spend and last use; null when the organization has no such key. */
  key(orgId: string, keyId: string): Promise<KeyRecord | null>;
  /** What a key's limit counts now: its charges in `period` and its open and pending holds. */
  keyUsage(orgId: string, keyId: string, period: string): Promise<number>;
  /** Newest first, at most `limit` (and never more than the retention). */
  recentRequests(orgId: string, limit: number): Promise<RequestLogEntry[]>;
  /** The newest request of the request log with this id (its request id, or its host's id for the reply), while the log keeps it; else null. */
  request(orgId: string, requestId: string): Promise<RequestLogEntry | null>;
  /** What has been refunded of each of these generations (by reservation id) that had a refund. */
  refunded(orgId: string, reservationIds: readonly string[]): Promise<Map<string, number>>;
  /** Nano-credits charged per UTC day (`YYYY-MM-DD`), for every day with a charge. */
  dailySpend(orgId: string): Promise<Map<string, number>>;
  /** Every organization's ledger totals and position, for the audit. */
  ledgers(): Promise<Map<string, OrgLedger>>;
  /** How many reservations are open (recorded and not yet resolved), in every organization. */
  openReservationCount(): Promise<number>;
}

/** Amounts in nano-credits. `available = granted - spent - reserved - pending`. */
export interface Balance {
  /** Σ grants + Σ adjustments (signed). */
  granted: number;
  /** Σ settled charges − Σ refunds. */
  spent: number;
  /** Held by reservations recorded in the log and not yet resolved. */
  reserved: number;
  /** Held by admissions whose reservation event has not reached the log yet. */
  pending: number;
}

export const availableOf = (b: Balance): number => b.granted - b.spent - b.reserved - b.pending;

/** What is shown as reserved: holds recorded in the log and holds still pending, together. */
export const reservedOf = (b: Balance): number => b.reserved + b.pending;

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

export type { KeyRecord };

export interface RequestLogEntry {
  requestId: string;
  /** Null for a request refused before anything was reserved. */
  reservationId: string | null;
  time: number;
  surface: string;
  model: string;
  host: string | null;
  keyId: string;
  /** Uncached input (every input token, in settlements written before the cache's classes). */
  inputTokens: number;
  /** Input read from the cache. */
  cacheReadTokens: number;
  /** Input written to the cache (for 5 minutes or an hour). */
  cacheWriteTokens: number;
  outputTokens: number;
  /** Uses of tools the host ran itself (web searches…), by class, as billed; absent when none. */
  hostedToolUses?: HostedToolCounts;
  /** Nano-credits charged (0 when released or expired). */
  cost: number;
  latencyMs: number | null;
  status: string;
  /** The serving host's own id for its reply, when it gave one (what a client passed the reply whole sees). */
  upstreamId?: string;
  /** The hosted tools offered and left out of the call (see OMITTED_TOOLS_HEADER); absent when none. */
  omittedTools?: string[];
  /** Every host call on the way (see HostAttempt); absent from requests recorded before they were, and from refusals. */
  attempts?: HostAttempt[];
  /** The catalogue version a settled request was priced with; absent from requests recorded before it was, and when there was none. */
  catalogueVersion?: string;
  /** The token classes billed by the gateway's own estimate, not the host's count (see ReservationSettled); absent: none. */
  estimated?: TokenClass[];
}

export interface OrgRecord {
  orgId: string;
  name: string;
  createdAt: number;
  /** Default rate limits of its keys that have none of their own (absent: none). */
  rateLimits?: RateLimits;
}

/** A member of an organization, as the dashboard lists them. */
export interface MemberRecord {
  userId: string;
  /** Null for members added before member events carried the email. */
  email: string | null;
  role: MemberRole;
  /** A member who may manage keys (owners always may). */
  manageKeys: boolean;
  addedAt: number;
}

/** The UTC day of a time, as the spend-per-day read model keys it. */
export const dayOf = (time: number): string => new Date(time).toISOString().slice(0, 10);
