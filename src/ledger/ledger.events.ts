import { chargeFor, type HostedToolCounts, type TokenPrices, type TokenUsage } from './money';

/**
 * Ledger events. Amounts are nano-credits, prices nano-credits per million tokens (per 1,000 uses of a hosted tool).
 * A settlement carries everything needed to recompute its charge on its own.
 */
export interface CreditsGranted {
  type: 'CreditsGranted';
  data: { orgId: string; grantId: string; amount: number; reason: string; grantedAt: number };
}

/** What a request is, carried on its reservation and on its resolution for the request log. */
export interface RequestFacts {
  requestId: string;
  keyId: string;
  surface: string;
  model: string;
  /**
   * The hosted tools offered and left out of the call, no serving host running them (by type,
   * each once, masked). Absent when none, and from events written before they were recorded.
   */
  omittedTools?: string[];
}

export interface CreditsReserved {
  type: 'CreditsReserved';
  data: RequestFacts & {
    reservationId: string;
    orgId: string;
    amount: number;
    reservedAt: number;
    expiresAt: number;
    /**
     * The catalogue version the request was planned and priced with (see CatalogueLoaded): its
     * settlement carries the same. Absent from events written before it was recorded, and when
     * the catalogue was not read from a file.
     */
    catalogueVersion?: string;
  };
}

/** How the request ended, as the request log shows it. */
export interface RequestOutcome {
  /** `ok`, or the error kind that ended it (`client_abort`, `provider_error`, `timeout`, …). */
  status: string;
  latencyMs: number;
  /** Every call of a host (and every host passed over) on the way, in order; absent from events written before they were recorded. */
  attempts?: HostAttempt[];
}

/** One call of a host, or a host passed over, on a request's way to its ending. */
export interface HostAttempt {
  /** The catalogue host's id. */
  host: string;
  /** The credential it was called with, by name (never its value); null for a host that takes none. */
  credential: string | null;
  /** The HTTP status the host answered with; null when it answered none (no connection, no first byte, not called). */
  status: number | null;
  /**
   * `ok` (it served), or why not: `rate_limited` (429), `server_error` (5xx), `rejected` (another
   * status), `connection`, `timeout`, `malformed`, `upstream_error` (an error in its stream),
   * `circuit_open` (passed over), `client_abort`, `deadline`.
   */
  reason: string;
  durationMs: number;
}

/** The token classes a settlement bills, as its provenance names them. */
export const TOKEN_CLASSES = ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h', 'output'] as const;
export type TokenClass = (typeof TOKEN_CLASSES)[number];

/** Most attempts one event carries: every host of a model, each with its retries, is far fewer. */
export const MAX_ATTEMPTS = 64;

export interface ReservationSettled {
  type: 'ReservationSettled';
  data: RequestFacts &
    RequestOutcome & {
      reservationId: string;
      orgId: string;
      host: string;
      hostModel: string;
      /** Uncached input. Events written before the cache's classes counted every input token here, at the same input price. */
      inputTokens: number;
      /** The cache's classes: absent (no such tokens) from events written before them. */
      cacheReadTokens?: number;
      cacheWriteTokens?: number;
      cacheWrite1hTokens?: number;
      outputTokens: number;
      /**
       * Uses of tools the host ran itself, by class (webSearch…): present when there were any,
       * each class with its price per 1,000 uses in `prices.hostedToolUses`. Absent from events written before them.
       */
      hostedToolUses?: HostedToolCounts;
      /** The price of each class; the cache's are absent from events written before them. */
      prices: Pick<TokenPrices, 'input' | 'output'> & Partial<TokenPrices>;
      /** The charge: ceil(Σ tokens of a class × its price / 1e6 + Σ uses × price / 1e3), see chargeFor (an interrupted one: at most `held`, see settledCharge). */
      amount: number;
      /** What the reservation held; the difference returns to the balance. */
      held: number;
      settledAt: number;
      /**
       * Present when the host's usage was not billed as it reported it: why (it reported none, or a
       * count failed the gateway's checks). The tokens it names are the gateway's own count of what
       * was sent and delivered. Absent from events written before the checks, and when every token
       * is the host's. The charge is recomputed from the tokens either way.
       */
      usageFlag?: string;
      /**
       * The charge's provenance: the token classes whose count is the gateway's own estimate (of
       * what was sent and delivered), not the host's, each once in TOKEN_CLASSES' order. Absent when
       * every count is the host's, and from events written before provenance was recorded.
       */
      estimated?: TokenClass[];
      /**
       * The host's own id for its reply (`chatcmpl-…`, `msg_…`): what a client of the host's format,
       * passed the reply whole, sees as its id. Absent when the host gave none, and from events
       * written before it was recorded.
       */
      upstreamId?: string;
      /**
       * Present when the request never ended on its own (the gateway was killed mid-stream) and its
       * reservation's expiry billed it from the last progress recorded (see ReservationProgress):
       * when that was, and the characters delivered by then. Its charge is never more than was held.
       */
      interrupted?: { progressAt: number; deliveredChars: number };
      /** Its reservation's catalogue version, whose prices `prices` must be (`ledger audit` checks); absent as there. */
      catalogueVersion?: string;
    };
}

/**
 * What a stream has delivered so far, recorded at intervals while it delivers (PROGRESS_INTERVAL_MS)
 * on its reservation's stream: the tokens a cut at that moment would bill, by class, with the host
 * that served and its prices. It moves no credits; if the request is never settled (a crash), the
 * reservation's expiry bills the last one instead of releasing the hold.
 */
export interface ReservationProgress {
  type: 'ReservationProgress';
  data: RequestFacts & {
    reservationId: string;
    orgId: string;
    host: string;
    hostModel: string;
    inputTokens: number;
    cacheReadTokens: number;
    cacheWriteTokens: number;
    cacheWrite1hTokens: number;
    outputTokens: number;
    /** As on a settlement: present when the host had run tools of its own, priced in `prices.hostedToolUses`. */
    hostedToolUses?: HostedToolCounts;
    prices: TokenPrices;
    /** Why some of the tokens are the gateway's own count (as on a settlement); absent when all are the host's. */
    usageFlag?: string;
    /** Which classes are the gateway's own count (as on a settlement); absent when all are the host's. */
    estimated?: TokenClass[];
    /** Characters of text, reasoning and tool calls delivered so far. */
    deliveredChars: number;
    recordedAt: number;
  };
}

/** A settlement's tokens (and hosted-tool uses) by class, whenever it was written: classes an older event lacks had none. */
export const settledUsage = (d: ReservationSettled['data']): TokenUsage => {
  const usage: TokenUsage = {
    inputTokens: d.inputTokens,
    cacheReadTokens: d.cacheReadTokens ?? 0,
    cacheWriteTokens: d.cacheWriteTokens ?? 0,
    cacheWrite1hTokens: d.cacheWrite1hTokens ?? 0,
    outputTokens: d.outputTokens,
  };
  if (d.hostedToolUses !== undefined) usage.hostedToolUses = d.hostedToolUses;
  return usage;
};

/** A settlement's prices by class, whenever it was written (an older event's cache classes had no tokens to price). */
export const settledPrices = ({ prices }: ReservationSettled['data']): TokenPrices => {
  const settled: TokenPrices = {
    input: prices.input,
    cacheRead: prices.cacheRead ?? 0,
    cacheWrite: prices.cacheWrite ?? 0,
    cacheWrite1h: prices.cacheWrite1h ?? 0,
    output: prices.output,
  };
  if (prices.hostedToolUses !== undefined) settled.hostedToolUses = prices.hostedToolUses;
  return settled;
};

/**
 * A settlement's charge, recomputed from its event alone: its tokens and hosted-tool uses at its prices (ceil, once);
 * for one billed from an interrupted stream's last progress, never more than its reservation held.
 */
export const settledCharge = (d: ReservationSettled['data']): number => {
  const charge = chargeFor(settledUsage(d), settledPrices(d));
  return d.interrupted === undefined ? charge : Math.min(charge, d.held);
};

export interface ReservationReleased {
  type: 'ReservationReleased';
  data: RequestFacts &
    RequestOutcome & {
      reservationId: string;
      orgId: string;
      host: string | null;
      held: number;
      reason: string;
      releasedAt: number;
    };
}

export interface ReservationExpired {
  type: 'ReservationExpired';
  data: RequestFacts & { reservationId: string; orgId: string; held: number; expiredAt: number };
}

/**
 * A request of a known organization turned away before anything was reserved (its balance
 * could not cover it, its model is unknown, its token cap too high): nothing moves in the
 * ledger, but the request log shows it like any other.
 */
export interface RequestRefused {
  type: 'RequestRefused';
  data: RequestFacts &
    RequestOutcome & {
      refusalId: string;
      orgId: string;
      reason: string;
      refusedAt: number;
    };
}

/** Why a credit note was issued. */
export const CREDIT_NOTE_REASONS = ['dispute', 'provider_outage', 'goodwill', 'correction', 'other'] as const;
export type CreditNoteReason = (typeof CREDIT_NOTE_REASONS)[number];

/**
 * Credits returned for one generation (a refund) or an adjustment of the balance, on the organization's
 * credits stream. Balance = Σ grants − Σ settled charges + Σ refunds + Σ adjustments (signed); a key's
 * spend = Σ its settled charges − Σ refunds naming it. The shape is a shared contract
 * (docs/credit-notes.md): statements and the standalone verifier read it.
 */
export interface CreditNoteIssued {
  type: 'CreditNoteIssued';
  data: {
    orgId: string;
    creditNoteId: string;
    /** The caller's idempotency key: the same key again returns the first note, never a second one. */
    idempotencyKey: string;
    /** 'refund': of one generation (reservationId set, keyId its key); 'adjustment': of the balance (both null). */
    kind: 'refund' | 'adjustment';
    reservationId: string | null;
    keyId: string | null;
    /**
     * Nano-credits, integer. Refund: > 0, returned to the balance and taken off the key's spend; never more, with
     * earlier refunds of the same generation, than it was charged. Adjustment: non-zero, + credits the balance, − debits it.
     */
    amount: number;
    reason: CreditNoteReason;
    memo?: string;
    /** Who issued it: 'cli', a management key's id, or a dashboard user's id. */
    issuedBy: string;
    issuedAt: number;
  };
}

export type ReservationEvent =
  CreditsReserved | ReservationProgress | ReservationSettled | ReservationReleased | ReservationExpired;
export type LedgerEvent = CreditsGranted | CreditNoteIssued | ReservationEvent | RequestRefused;

export const creditsStream = (orgId: string) => `credits-${orgId}`;
export const reservationStream = (reservationId: string) => `reservation-${reservationId}`;
export const refusalStream = (refusalId: string) => `refusal-${refusalId}`;
