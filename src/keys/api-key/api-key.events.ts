import type { KeyLimit, RateLimits } from '../../identity/identity.events';

/** An API key's events, on its own stream. No secret ever appears here: only its hash and prefix. */

/**
 * Who made a key: the operator (the operator tool), a signed-in member (the dashboard) or a
 * management key (the management API).
 */
export type KeyMaker = { kind: 'operator' } | { kind: 'member'; userId: string } | { kind: 'management_key'; keyId: string };

export interface ApiKeyCreated {
  type: 'ApiKeyCreated';
  /**
   * `hash` is the SHA-256 of the secret; `prefix` its first characters, for people to recognise it.
   * `rateLimits`: the key's own (absent in keys made without, and in events written before them).
   */
  data: {
    keyId: string;
    orgId: string;
    name: string;
    hash: string;
    prefix: string;
    createdAt: number;
    rateLimits?: RateLimits;
    /** When the key stops working (ms); absent: never. */
    expiresAt?: number;
    limit?: KeyLimit;
    /** A management key manages the organization's keys (/api/v1/keys) and cannot call models; absent: an ordinary key. */
    kind?: 'management';
    /**
     * A management key made with billing rights: it may also issue credit notes
     * (/api/v1/credit-notes), but only when `createdBy` is the operator (see hasBillingRights): the
     * dashboard's owners could once give them too, and those events say so no differently.
     */
    billing?: true;
    /** Who made it; absent in events written before it was recorded. */
    createdBy?: KeyMaker;
  };
}

/** What an update changes: each field given is set (null clears it); the rest stay. */
export interface KeyChanges {
  name?: string;
  rateLimits?: RateLimits | null;
  expiresAt?: number | null;
  limit?: KeyLimit | null;
  /** A disabled key is refused like a revoked one, until it is enabled again. */
  disabled?: boolean;
}

export interface ApiKeyUpdated {
  type: 'ApiKeyUpdated';
  data: { keyId: string; orgId: string; hash: string; changes: KeyChanges; updatedAt: number };
}

export interface ApiKeyRevoked {
  type: 'ApiKeyRevoked';
  data: { keyId: string; orgId: string; hash: string; revokedAt: number };
}

export type ApiKeyEvent = ApiKeyCreated | ApiKeyUpdated | ApiKeyRevoked;

export const apiKeyStream = (keyId: string) => `apikey-${keyId}`;
