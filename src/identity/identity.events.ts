/**
 * Identity events: organizations, their members and users (API keys have theirs in keys/), and the
 * limits keys and organizations share. No secret ever appears here.
 */
export interface OrganizationCreated {
  type: 'OrganizationCreated';
  data: { orgId: string; name: string; createdAt: number };
}

/** An owner runs the organization (members, keys); a member uses it (and manages keys if allowed). */
export type MemberRole = 'owner' | 'member';

export interface MemberAdded {
  type: 'MemberAdded';
  /**
   * `email` is the user's, for member lists (absent in events written before members were listed).
   * `manageKeys`: a member who may create, change and revoke keys (owners always may).
   */
  data: { orgId: string; userId: string; role: MemberRole; addedAt: number; email?: string; manageKeys?: boolean };
}

export interface MemberRemoved {
  type: 'MemberRemoved';
  data: { orgId: string; userId: string; removedAt: number };
}

/** Whether a member (not an owner) may manage the organization's keys. */
export interface MemberKeyAccessSet {
  type: 'MemberKeyAccessSet';
  data: { orgId: string; userId: string; manageKeys: boolean; setAt: number };
}

export interface UserRegistered {
  type: 'UserRegistered';
  /** `passwordHash` is a salted scrypt hash, never the password. */
  data: { userId: string; email: string; passwordHash: string; registeredAt: number };
}

/** One dashboard session signed out: it ends on every instance (the user's other sessions go on). */
export interface SignedOut {
  type: 'SignedOut';
  data: { userId: string; sessionId: string; signedOutAt: number };
}

/** A new password (a salted scrypt hash): every session from before ends. */
export interface PasswordChanged {
  type: 'PasswordChanged';
  data: { userId: string; passwordHash: string; changedAt: number };
}

/** Every session of the user ends: they were removed from organization `orgId`. */
export interface SessionsEnded {
  type: 'SessionsEnded';
  data: { userId: string; orgId: string; reason: 'member_removed'; endedAt: number };
}

/** A user's stream: registration, then the ends of their sessions. */
export type UserEvent = UserRegistered | SignedOut | PasswordChanged | SessionsEnded;

/** Requests and tokens a key (or, by default, each key of an organization) may use in any 60 seconds. */
export interface RateLimits {
  requestsPerMinute?: number;
  tokensPerMinute?: number;
}

/** When a key's credit limit starts afresh: never, or at each UTC day, week (from Monday) or month. */
export type LimitReset = 'never' | 'daily' | 'weekly' | 'monthly';

/** Nano-credits a key may be charged per period: its settled charges in the period and its open holds together. */
export interface KeyLimit {
  amount: number;
  reset: LimitReset;
}

/** The organization's default rate limits, for its keys that have none of their own (null: none). */
export interface OrganizationRateLimitsSet {
  type: 'OrganizationRateLimitsSet';
  data: { orgId: string; rateLimits: RateLimits | null; setAt: number };
}

export type OrganizationEvent =
  OrganizationCreated | MemberAdded | MemberRemoved | MemberKeyAccessSet | OrganizationRateLimitsSet;
export type IdentityEvent = OrganizationEvent | UserEvent;

export const organizationStream = (orgId: string) => `org-${orgId}`;
/** A user's stream is named by a digest of the email, which makes emails unique. */
export const userStream = (emailDigest: string) => `user-${emailDigest}`;
