import type { KeyLimit, RateLimits } from './identity.events';

/**
 * What identity needs of the read models, as identity states it (the projection stores
 * implement it): an API key found by the hash of its secret.
 */
export interface KeyRecord {
  keyId: string;
  orgId: string;
  name: string;
  prefix: string;
  hash: string;
  createdAt: number;
  revokedAt: number | null;
  /** When a request made with the key last ended. */
  lastUsedAt: number | null;
  /** The key's own rate limits (absent: the organization's default, if any, applies). */
  rateLimits?: RateLimits;
  /** When it stops working (ms); absent: never. */
  expiresAt?: number;
  /** Disabled until enabled again. */
  disabled?: boolean;
  /** Its credit limit (absent: none but the organization's balance). */
  limit?: KeyLimit;
  /** A management key: it manages the organization's keys and cannot call models. */
  kind?: 'management';
  /** A management key that may issue credit notes (billing rights). */
  billing?: true;
  /** Nano-credits charged to it (settled), where the read model lists an organization's keys. */
  spent?: number;
}

export type KeyStatus = 'active' | 'revoked' | 'disabled' | 'expired';

/** A key serves while active: not revoked (for good), not disabled (until enabled), not past its expiry. */
export function keyStatus(key: Pick<KeyRecord, 'revokedAt' | 'expiresAt' | 'disabled'>, now = Date.now()): KeyStatus {
  if (key.revokedAt !== null) return 'revoked';
  if (key.disabled === true) return 'disabled';
  if (key.expiresAt !== undefined && key.expiresAt <= now) return 'expired';
  return 'active';
}

export interface KeyLookup {
  keyByHash(hash: string): Promise<KeyRecord | null>;
}
