import { randomUUID } from 'node:crypto';
import { handleCommand, newStream, readStreamState, StreamState } from '../eventstore/command-handler';
import type { EventStore } from '../eventstore/event-store';
import {
  apiKeyDecider,
  IdentityRuleError,
  KeyChangesAsked,
  normalizeEmail,
  Organization,
  organizationDecider,
  User,
  userDecider,
} from './identity.decider';
import { type KeyLookup, type KeyRecord, keyStatus } from './key-lookup';
import {
  ApiKeyCreated,
  ApiKeyUpdated,
  apiKeyStream,
  KeyChanges,
  KeyLimit,
  MemberRole,
  OrganizationCreated,
  OrganizationRateLimitsSet,
  organizationStream,
  RateLimits,
  userStream,
} from './identity.events';
import { emailDigest, hashKeySecret, hashPassword, keyPrefixOf, looksLikeKeySecret, newKeySecret } from './secrets';

type Clock = () => number;

/**
 * Commands on a stream others may write at the same moment (two owners, two management calls) are
 * decided again on the stream as it now is, a few times, instead of failing on the first conflict.
 */
const CONCURRENT = { retries: 3 };

const userStreamOf = (email: string) => userStream(emailDigest(normalizeEmail(email)));

export interface CreatedKey {
  keyId: string;
  /** Shown once, to whoever created the key; only its hash is kept. */
  secret: string;
  orgId: string;
  name: string;
  prefix: string;
  kind?: 'management';
}

/** What a key may be made with beyond its name. */
export interface KeySettings {
  rateLimits?: RateLimits;
  /** When the key stops working (ms). */
  expiresAt?: number;
  /** A management key (it manages keys and cannot call models). */
  kind?: 'management';
  limit?: KeyLimit;
}

/** Organizations, users, members and API keys: command handlers over their streams. */
export class IdentityService {
  constructor(
    private readonly events: EventStore,
    private readonly keys: KeyLookup,
    private readonly clock: Clock = Date.now,
  ) {}

  async organization(orgId: string): Promise<StreamState<Organization>> {
    return readStreamState(this.events, organizationStream(orgId), organizationDecider);
  }

  async createOrganization(name: string): Promise<{ orgId: string; name: string }> {
    const orgId = randomUUID();
    const command = { type: 'CreateOrganization' as const, orgId, name, now: this.clock() };
    const { events } = await handleCommand(this.events, organizationStream(orgId), organizationDecider, command, {
      known: newStream(organizationDecider),
    });
    return { orgId, name: (events[0] as OrganizationCreated).data.name };
  }

  async user(email: string): Promise<StreamState<User>> {
    return readStreamState(this.events, userStreamOf(email), userDecider);
  }

  async registerUser(email: string, password: string): Promise<{ userId: string; email: string }> {
    if (password.length < 8) throw new IdentityRuleError('invalid_password', 'password must be at least 8 characters');
    const known = await this.user(email);
    const userId = randomUUID();
    // Decide before hashing so a duplicate email fails fast; the append re-checks it.
    userDecider.decide({ type: 'RegisterUser', userId, email, passwordHash: '', now: 0 }, known.state);
    const passwordHash = await hashPassword(password);
    const command = { type: 'RegisterUser' as const, userId, email, passwordHash, now: this.clock() };
    const { events } = await handleCommand(this.events, userStreamOf(email), userDecider, command, { known });
    return { userId, email: events[0].data.email };
  }

  /**
   * Adds a registered user to an organization. `by`: the member asking (an owner), absent for the
   * operator; `manageKeys`: a member who may manage keys.
   */
  async addMember(
    orgId: string,
    email: string,
    role: MemberRole = 'member',
    options: { by?: string; manageKeys?: boolean } = {},
  ): Promise<{ userId: string; email: string }> {
    const { state: user } = await this.user(email);
    if (!user.exists) throw new IdentityRuleError('user_not_found', `no user with email ${normalizeEmail(email)}`);
    const command = {
      type: 'AddMember' as const,
      orgId,
      userId: user.userId,
      email: user.email,
      role,
      ...options,
      now: this.clock(),
    };
    await handleCommand(this.events, organizationStream(orgId), organizationDecider, command, CONCURRENT);
    return { userId: user.userId, email: user.email };
  }

  /** Removes a member (never the last owner). `by`: the owner asking, absent for the operator. */
  async removeMember(orgId: string, userId: string, by?: string): Promise<void> {
    const command = { type: 'RemoveMember' as const, orgId, userId, by, now: this.clock() };
    await handleCommand(this.events, organizationStream(orgId), organizationDecider, command, CONCURRENT);
  }

  /** Whether a member (not an owner) may manage keys. `by`: the owner asking, absent for the operator. */
  async setMemberKeyAccess(orgId: string, userId: string, manageKeys: boolean, by?: string): Promise<void> {
    const command = { type: 'SetMemberKeyAccess' as const, orgId, userId, manageKeys, by, now: this.clock() };
    await handleCommand(this.events, organizationStream(orgId), organizationDecider, command, CONCURRENT);
  }

  async createApiKey(orgId: string, name: string, settings: KeySettings = {}): Promise<CreatedKey> {
    const { state: organization } = await this.organization(orgId);
    const keyId = randomUUID();
    const secret = newKeySecret();
    const prefix = keyPrefixOf(secret);
    const command = {
      type: 'CreateApiKey' as const,
      keyId,
      orgId,
      name,
      hash: hashKeySecret(secret),
      prefix,
      ...(settings.rateLimits === undefined ? {} : { rateLimits: settings.rateLimits }),
      ...(settings.expiresAt === undefined ? {} : { expiresAt: settings.expiresAt }),
      ...(settings.kind === undefined ? {} : { kind: settings.kind }),
      ...(settings.limit === undefined ? {} : { limit: settings.limit }),
      now: this.clock(),
    };
    const decider = apiKeyDecider(organization);
    const { events } = await handleCommand(this.events, apiKeyStream(keyId), decider, command, { known: newStream(decider) });
    const created = (events[0] as ApiKeyCreated).data;
    return { keyId, secret, orgId, name: created.name, prefix, ...(created.kind ? { kind: created.kind } : {}) };
  }

  /** Sets (or with null, clears) the rate limits of the organization's keys that have none of their own. */
  async setOrganizationRateLimits(orgId: string, rateLimits: RateLimits | null): Promise<RateLimits | null> {
    const command = { type: 'SetRateLimits' as const, orgId, rateLimits, now: this.clock() };
    const { events } = await handleCommand(this.events, organizationStream(orgId), organizationDecider, command, CONCURRENT);
    return (events[0] as OrganizationRateLimitsSet).data.rateLimits;
  }

  /** Changes a key's name, rate limits, expiry, or whether it is disabled; returns what changed, as checked. */
  async updateApiKey(keyId: string, changes: KeyChangesAsked): Promise<{ keyId: string; orgId: string; changes: KeyChanges }> {
    const command = { type: 'UpdateApiKey' as const, keyId, changes, now: this.clock() };
    const { events } = await handleCommand(this.events, apiKeyStream(keyId), apiKeyDecider(), command, CONCURRENT);
    const updated = events[0] as ApiKeyUpdated;
    return { keyId, orgId: updated.data.orgId, changes: updated.data.changes };
  }

  async revokeApiKey(keyId: string): Promise<{ keyId: string; orgId: string }> {
    const command = { type: 'RevokeApiKey' as const, keyId, now: this.clock() };
    const { events } = await handleCommand(this.events, apiKeyStream(keyId), apiKeyDecider(), command, CONCURRENT);
    return { keyId, orgId: events[0].data.orgId };
  }

  /** The active key a secret names, or null: unknown, malformed, revoked, disabled or expired all look the same. */
  async authenticate(secret: string): Promise<KeyRecord | null> {
    if (!looksLikeKeySecret(secret)) return null;
    const key = await this.keys.keyByHash(hashKeySecret(secret));
    return key && keyStatus(key, this.clock()) === 'active' ? key : null;
  }
}

/** Revokes a key, as a DELETE does: a key revoked meanwhile (by a request at the same moment) is revoked, as asked. */
export async function revokeOnce(identity: IdentityService, keyId: string): Promise<void> {
  try {
    await identity.revokeApiKey(keyId);
  } catch (error) {
    if (!(error instanceof IdentityRuleError && error.code === 'key_revoked')) throw error;
  }
}
