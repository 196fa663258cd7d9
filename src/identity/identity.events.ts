/** Identity events: organizations, their members, users and API keys. No secret ever appears here. */
export interface OrganizationCreated {
  type: 'OrganizationCreated';
  data: { orgId: string; name: string; createdAt: number };
}

export interface MemberAdded {
  type: 'MemberAdded';
  data: { orgId: string; userId: string; role: 'owner' | 'member'; addedAt: number };
}

export interface UserRegistered {
  type: 'UserRegistered';
  /** `passwordHash` is a salted scrypt hash, never the password. */
  data: { userId: string; email: string; passwordHash: string; registeredAt: number };
}

export interface ApiKeyCreated {
  type: 'ApiKeyCreated';
  /** `hash` is the SHA-256 of the secret; `prefix` its first characters, for people to recognise it. */
  data: { keyId: string; orgId: string; name: string; hash: string; prefix: string; createdAt: number };
}

export interface ApiKeyRevoked {
  type: 'ApiKeyRevoked';
  data: { keyId: string; orgId: string; hash: string; revokedAt: number };
}

export type OrganizationEvent = OrganizationCreated | MemberAdded;
export type ApiKeyEvent = ApiKeyCreated | ApiKeyRevoked;
export type IdentityEvent = OrganizationEvent | UserRegistered | ApiKeyEvent;

export const organizationStream = (orgId: string) => `org-${orgId}`;
/** A user's stream is named by a digest of the email, which makes emails unique. */
export const userStream = (emailDigest: string) => `user-${emailDigest}`;
export const apiKeyStream = (keyId: string) => `apikey-${keyId}`;
