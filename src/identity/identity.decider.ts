import type { Decider } from '../eventstore/command-handler';
import {
  ApiKeyEvent,
  KeyChanges,
  KeyLimit,
  LimitReset,
  MemberAdded,
  MemberKeyAccessSet,
  MemberRemoved,
  MemberRole,
  OrganizationCreated,
  OrganizationEvent,
  OrganizationRateLimitsSet,
  RateLimits,
  UserRegistered,
} from './identity.events';

export class IdentityRuleError extends Error {
  constructor(
    readonly code:
      | 'invalid_name'
      | 'invalid_email'
      | 'invalid_password'
      | 'organization_exists'
      | 'organization_not_found'
      | 'user_exists'
      | 'user_not_found'
      | 'already_member'
      | 'not_member'
      | 'not_owner'
      | 'last_owner'
      | 'key_exists'
      | 'key_not_found'
      | 'key_revoked'
      | 'invalid_rate_limits'
      | 'invalid_expiry'
      | 'invalid_limit'
      | 'no_change',
    message: string,
  ) {
    super(message);
    this.name = 'IdentityRuleError';
  }
}

const MAX_NAME = 100;

function checkName(what: string, name: string): string {
  const trimmed = name.trim();
  if (trimmed.length === 0 || trimmed.length > MAX_NAME) {
    throw new IdentityRuleError('invalid_name', `${what} name must be 1 to ${MAX_NAME} characters`);
  }
  return trimmed;
}

// ---------------------------------------------------------------------------------------------
// Organizations and their members.

export interface Membership {
  role: MemberRole;
  manageKeys: boolean;
}

export interface Organization {
  exists: boolean;
  name: string;
  members: ReadonlyMap<string, Membership>;
}

export const initialOrganization = (): Organization => ({ exists: false, name: '', members: new Map() });

/** Owners manage everything; a member manages keys only when an owner allowed it. */
export const mayManageKeys = (member: Membership | undefined): boolean =>
  member !== undefined && (member.role === 'owner' || member.manageKeys);

function withMember(state: Organization, userId: string, member: Membership | null): Organization {
  const members = new Map(state.members);
  if (member === null) members.delete(userId);
  else members.set(userId, member);
  return { ...state, members };
}

export function evolveOrganization(state: Organization, event: OrganizationEvent): Organization {
  switch (event.type) {
    case 'OrganizationCreated':
      return { exists: true, name: event.data.name, members: state.members };
    case 'MemberAdded':
      return withMember(state, event.data.userId, { role: event.data.role, manageKeys: event.data.manageKeys === true });
    case 'MemberRemoved':
      return withMember(state, event.data.userId, null);
    case 'MemberKeyAccessSet': {
      const member = state.members.get(event.data.userId);
      return member ? withMember(state, event.data.userId, { ...member, manageKeys: event.data.manageKeys }) : state;
    }
    case 'OrganizationRateLimitsSet':
      return state;
  }
}

/** The largest rate limit accepted: far above any real traffic, and well inside a double's integers. */
const MAX_RATE_LIMIT = 1_000_000_000_000;

/** Rate limits as given, checked: each a whole number from 1 up; absent ones are none. Empty means none at all. */
export function checkRateLimits(limits: RateLimits): RateLimits | null {
  const checked: RateLimits = {};
  for (const field of ['requestsPerMinute', 'tokensPerMinute'] as const) {
    const value = limits[field];
    if (value === undefined || value === null) continue;
    if (!Number.isSafeInteger(value) || value < 1 || value > MAX_RATE_LIMIT) {
      throw new IdentityRuleError(
        'invalid_rate_limits',
        `${field === 'requestsPerMinute' ? 'requests' : 'tokens'} per minute must be a whole number from 1 to ${MAX_RATE_LIMIT}`,
      );
    }
    checked[field] = value;
  }
  return Object.keys(checked).length === 0 ? null : checked;
}

/**
 * `by`: the member who asks, for the commands only owners may give (absent: the operator, who may
 * give them all).
 */
export type OrganizationCommand =
  | { type: 'CreateOrganization'; orgId: string; name: string; now: number }
  | {
      type: 'AddMember';
      orgId: string;
      userId: string;
      email: string;
      role: MemberRole;
      manageKeys?: boolean;
      by?: string;
      now: number;
    }
  | { type: 'RemoveMember'; orgId: string; userId: string; by?: string; now: number }
  | { type: 'SetMemberKeyAccess'; orgId: string; userId: string; manageKeys: boolean; by?: string; now: number }
  | { type: 'SetRateLimits'; orgId: string; rateLimits: RateLimits | null; now: number };

/** The organization exists and, when a member asks, that member is one of its owners. */
function checkOwner(state: Organization, orgId: string, by: string | undefined): void {
  if (!state.exists) throw new IdentityRuleError('organization_not_found', `no organization ${orgId}`);
  if (by !== undefined && state.members.get(by)?.role !== 'owner') {
    throw new IdentityRuleError('not_owner', "only the organization's owners manage its members");
  }
}

function memberOf(state: Organization, userId: string): Membership {
  const member = state.members.get(userId);
  if (!member) throw new IdentityRuleError('not_member', 'no such member of this organization');
  return member;
}

export function decideOrganization(command: OrganizationCommand, state: Organization): OrganizationEvent[] {
  switch (command.type) {
    case 'CreateOrganization': {
      if (state.exists) throw new IdentityRuleError('organization_exists', 'organization already exists');
      const event: OrganizationCreated = {
        type: 'OrganizationCreated',
        data: { orgId: command.orgId, name: checkName('organization', command.name), createdAt: command.now },
      };
      return [event];
    }
    case 'AddMember': {
      // The first member of a new organization is its creator, made its owner by no one.
      const founding = state.members.size === 0 && command.role === 'owner';
      if (!founding) checkOwner(state, command.orgId, command.by);
      if (!state.exists) throw new IdentityRuleError('organization_not_found', `no organization ${command.orgId}`);
      if (state.members.has(command.userId)) {
        throw new IdentityRuleError('already_member', 'user is already a member of this organization');
      }
      const event: MemberAdded = {
        type: 'MemberAdded',
        data: {
          orgId: command.orgId,
          userId: command.userId,
          role: command.role,
          addedAt: command.now,
          email: command.email,
          ...(command.role === 'member' && command.manageKeys === true ? { manageKeys: true } : {}),
        },
      };
      return [event];
    }
    case 'RemoveMember': {
      checkOwner(state, command.orgId, command.by);
      const member = memberOf(state, command.userId);
      const owners = [...state.members.values()].filter((m) => m.role === 'owner').length;
      if (member.role === 'owner' && owners === 1) {
        throw new IdentityRuleError('last_owner', 'the last owner cannot be removed: make another owner first');
      }
      const event: MemberRemoved = {
        type: 'MemberRemoved',
        data: { orgId: command.orgId, userId: command.userId, removedAt: command.now },
      };
      return [event];
    }
    case 'SetMemberKeyAccess': {
      checkOwner(state, command.orgId, command.by);
      const member = memberOf(state, command.userId);
      if (member.role === 'owner') throw new IdentityRuleError('no_change', 'owners always manage keys');
      const event: MemberKeyAccessSet = {
        type: 'MemberKeyAccessSet',
        data: { orgId: command.orgId, userId: command.userId, manageKeys: command.manageKeys, setAt: command.now },
      };
      return [event];
    }
    case 'SetRateLimits': {
      if (!state.exists) throw new IdentityRuleError('organization_not_found', `no organization ${command.orgId}`);
      const event: OrganizationRateLimitsSet = {
        type: 'OrganizationRateLimitsSet',
        data: {
          orgId: command.orgId,
          rateLimits: command.rateLimits === null ? null : checkRateLimits(command.rateLimits),
          setAt: command.now,
        },
      };
      return [event];
    }
  }
}

export const organizationDecider: Decider<OrganizationCommand, Organization, OrganizationEvent> = {
  decide: decideOrganization,
  evolve: evolveOrganization,
  initialState: initialOrganization,
};

// ---------------------------------------------------------------------------------------------
// Users.

export type User = { exists: false } | { exists: true; userId: string; email: string; passwordHash: string };

export const initialUser = (): User => ({ exists: false });

export const evolveUser = (_state: User, event: UserRegistered): User => ({ exists: true, ...event.data });

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Emails are compared lower-cased and trimmed. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export interface RegisterUser {
  type: 'RegisterUser';
  userId: string;
  email: string;
  passwordHash: string;
  now: number;
}

export function decideUser(command: RegisterUser, state: User): UserRegistered[] {
  const email = normalizeEmail(command.email);
  if (!EMAIL.test(email) || email.length > 254) {
    throw new IdentityRuleError('invalid_email', `"${command.email}" is not an email address`);
  }
  if (state.exists) throw new IdentityRuleError('user_exists', `a user with email ${email} already exists`);
  return [
    {
      type: 'UserRegistered',
      data: { userId: command.userId, email, passwordHash: command.passwordHash, registeredAt: command.now },
    },
  ];
}

export const userDecider: Decider<RegisterUser, User, UserRegistered> = {
  decide: decideUser,
  evolve: evolveUser,
  initialState: initialUser,
};

// ---------------------------------------------------------------------------------------------
// API keys.

export type ApiKey =
  { status: 'none' } | { status: 'active' | 'revoked'; keyId: string; orgId: string; hash: string; limit: KeyLimit | null };

export const initialApiKey = (): ApiKey => ({ status: 'none' });

export function evolveApiKey(state: ApiKey, event: ApiKeyEvent): ApiKey {
  if (event.type === 'ApiKeyCreated') {
    const { keyId, orgId, hash, limit } = event.data;
    return { status: 'active', keyId, orgId, hash, limit: limit ?? null };
  }
  if (state.status === 'none') return state;
  if (event.type === 'ApiKeyUpdated') {
    return event.data.changes.limit === undefined ? state : { ...state, limit: event.data.changes.limit };
  }
  return { ...state, status: 'revoked' };
}

/** An expiry time as given: a whole number of milliseconds after 1970, in the future of `now`. */
function checkExpiry(expiresAt: number, now: number): number {
  if (!Number.isSafeInteger(expiresAt) || expiresAt <= now) {
    throw new IdentityRuleError('invalid_expiry', 'the expiry must be a time in the future');
  }
  return expiresAt;
}

const RESETS = ['never', 'daily', 'weekly', 'monthly'];

/** A credit limit as given: a whole number of nano-credits from 1 up, and a known reset. */
export function checkLimit(limit: KeyLimit): KeyLimit {
  if (!Number.isSafeInteger(limit.amount) || limit.amount < 1) {
    throw new IdentityRuleError('invalid_limit', 'a key limit must be a positive amount of credits');
  }
  if (!RESETS.includes(limit.reset)) {
    throw new IdentityRuleError('invalid_limit', `a key limit resets ${RESETS.join(', ')}; got "${String(limit.reset)}"`);
  }
  return { amount: limit.amount, reset: limit.reset };
}

/** A key's changes as asked: a new limit's reset may be left out, to keep the key's current one. */
export type KeyChangesAsked = Omit<KeyChanges, 'limit'> & { limit?: { amount: number; reset?: LimitReset } | null };

/** Changes as given, checked; at least one. A limit's amount alone keeps the current limit's reset (else never). */
function checkChanges(changes: KeyChangesAsked, now: number, current: KeyLimit | null): KeyChanges {
  const checked: KeyChanges = {};
  if (changes.name !== undefined) checked.name = checkName('key', changes.name);
  if (changes.rateLimits !== undefined)
    checked.rateLimits = changes.rateLimits === null ? null : checkRateLimits(changes.rateLimits);
  if (changes.expiresAt !== undefined)
    checked.expiresAt = changes.expiresAt === null ? null : checkExpiry(changes.expiresAt, now);
  if (changes.disabled !== undefined) checked.disabled = changes.disabled;
  if (changes.limit !== undefined) {
    checked.limit =
      changes.limit === null
        ? null
        : checkLimit({ amount: changes.limit.amount, reset: changes.limit.reset ?? current?.reset ?? 'never' });
  }
  if (Object.keys(checked).length === 0)
    throw new IdentityRuleError('no_change', 'nothing to change: give a name, limits, an expiry, or disable or enable the key');
  return checked;
}

export type ApiKeyCommand =
  | {
      type: 'CreateApiKey';
      keyId: string;
      orgId: string;
      name: string;
      hash: string;
      prefix: string;
      rateLimits?: RateLimits;
      expiresAt?: number;
      limit?: KeyLimit;
      kind?: 'management';
      now: number;
    }
  | { type: 'UpdateApiKey'; keyId: string; changes: KeyChangesAsked; now: number }
  | { type: 'RevokeApiKey'; keyId: string; now: number };

export function decideApiKey(command: ApiKeyCommand, state: ApiKey, organization: Organization): ApiKeyEvent[] {
  switch (command.type) {
    case 'CreateApiKey': {
      if (state.status !== 'none') throw new IdentityRuleError('key_exists', 'key already exists');
      if (!organization.exists) throw new IdentityRuleError('organization_not_found', `no organization ${command.orgId}`);
      const { keyId, orgId, hash, prefix, now } = command;
      const rateLimits = command.rateLimits === undefined ? null : checkRateLimits(command.rateLimits);
      return [
        {
          type: 'ApiKeyCreated',
          data: {
            keyId,
            orgId,
            name: checkName('key', command.name),
            hash,
            prefix,
            createdAt: now,
            ...(rateLimits === null ? {} : { rateLimits }),
            ...(command.expiresAt === undefined ? {} : { expiresAt: checkExpiry(command.expiresAt, now) }),
            ...(command.limit === undefined ? {} : { limit: checkLimit(command.limit) }),
            ...(command.kind === 'management' ? { kind: 'management' as const } : {}),
          },
        },
      ];
    }
    case 'UpdateApiKey': {
      if (state.status === 'none') throw new IdentityRuleError('key_not_found', `no key ${command.keyId}`);
      if (state.status === 'revoked') throw new IdentityRuleError('key_revoked', 'key is revoked: it cannot be changed');
      const { keyId, orgId, hash } = state;
      return [
        {
          type: 'ApiKeyUpdated',
          data: { keyId, orgId, hash, changes: checkChanges(command.changes, command.now, state.limit), updatedAt: command.now },
        },
      ];
    }
    case 'RevokeApiKey': {
      if (state.status === 'none') throw new IdentityRuleError('key_not_found', `no key ${command.keyId}`);
      if (state.status === 'revoked') throw new IdentityRuleError('key_revoked', 'key is already revoked');
      return [
        {
          type: 'ApiKeyRevoked',
          data: { keyId: state.keyId, orgId: state.orgId, hash: state.hash, revokedAt: command.now },
        },
      ];
    }
  }
}

/**
 * A key is decided on its own stream and on the organization it belongs to (a key is created only
 * for one that exists): the decider for keys of that organization, as read from its stream.
 */
export const apiKeyDecider = (
  organization: Organization = initialOrganization(),
): Decider<ApiKeyCommand, ApiKey, ApiKeyEvent> => ({
  decide: (command, state) => decideApiKey(command, state, organization),
  evolve: evolveApiKey,
  initialState: initialApiKey,
});
