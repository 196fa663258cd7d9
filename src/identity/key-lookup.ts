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
}

/** A key is active until it is revoked; revoking cannot be undone. */
export const keyStatus = (key: Pick<KeyRecord, 'revokedAt'>): 'active' | 'revoked' =>
  key.revokedAt === null ? 'active' : 'revoked';

export interface KeyLookup {
  keyByHash(hash: string): Promise<KeyRecord | null>;
}
