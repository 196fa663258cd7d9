import { randomUUID } from 'node:crypto';
import { handleCommand, newStream, readStreamState, StreamState } from '../eventstore/command-handler';
import type { EventStore } from '../eventstore/event-store';
import { maskSecrets } from '../key-secret/key-secret';
import { wellFormed } from './checks';
import { IdentityRuleError } from './identity-rule-error';
import {
  MemberRole,
  OrganizationCreated,
  OrganizationRateLimitsSet,
  organizationStream,
  RateLimits,
  userStream,
  type UserRegistered,
} from './identity.events';
import { type KeyLookup, type KeyRecord, keyStatus } from './key-lookup';
import { Organization, organizationDecider } from './organization.decider';
import { emailDigest, hashKeySecret, hashPassword, looksLikeKeySecret } from './secrets';
import { evolveUser, normalizeEmail, SessionClaim, sessionLive, User, userDecider } from './user.decider';

type Clock = () => number;

/**
 * Commands on a stream others may write at the same moment (two owners) are decided again on the
 * stream as it now is, a few times, instead of failing on the first conflict.
 */
const CONCURRENT = { retries: 3 };

const userStreamOf = (email: string) => userStream(emailDigest(normalizeEmail(email)));

/**
 * Organizations, users and members: command handlers over their streams; and authentication, the
 * active key a secret names (keys themselves are made, changed and revoked in keys/).
 */
export class IdentityService {
  /**
   * `caughtUp`: resolves once the key look-ups include everything in the log now (bounded; never
   * rejects). A key made a moment ago by another process (the operator tool, another worker)
   * may not be in them yet.
   */
  constructor(
    private readonly events: EventStore,
    private readonly keys: KeyLookup,
    private readonly clock: Clock = Date.now,
    private readonly caughtUp: () => Promise<void> = async () => undefined,
  ) {}

  async organization(orgId: string): Promise<StreamState<Organization>> {
    return readStreamState(this.events, organizationStream(orgId), organizationDecider);
  }

  async createOrganization(name: string): Promise<{ orgId: string; name: string }> {
    const orgId = randomUUID();
    // A secret pasted into the name is masked before the name is stored (and shown).
    const command = { type: 'CreateOrganization' as const, orgId, name: maskSecrets(name), now: this.clock() };
    const { events } = await handleCommand(this.events, organizationStream(orgId), organizationDecider, command, {
      known: newStream(organizationDecider),
    });
    return { orgId, name: (events[0] as OrganizationCreated).data.name };
  }

  async user(email: string): Promise<StreamState<User>> {
    return readStreamState(this.events, userStreamOf(email), userDecider);
  }

  async registerUser(email: string, password: string): Promise<{ userId: string; email: string }> {
    checkPassword(password);
    const known = await this.user(email);
    const userId = randomUUID();
    // Decide before hashing so a duplicate email fails fast; the append re-checks it.
    userDecider.decide({ type: 'RegisterUser', userId, email, passwordHash: '', now: 0 }, known.state);
    const passwordHash = await hashPassword(password);
    const command = { type: 'RegisterUser' as const, userId, email, passwordHash, now: this.clock() };
    const { events } = await handleCommand(this.events, userStreamOf(email), userDecider, command, { known });
    return { userId, email: (events[0] as UserRegistered).data.email };
  }

  /**
   * Whether a dashboard session is still live, as the user's stream has it now: read from the log
   * (a handful of events), so that a session ended on any instance is refused on every other at once.
   */
  async sessionLive(email: string, session: SessionClaim): Promise<boolean> {
    return sessionLive((await this.user(email)).state, session);
  }

  /** Ends one session, everywhere. */
  async signOut(email: string, session: SessionClaim): Promise<void> {
    const command = { type: 'SignOut' as const, session, now: this.clock() };
    await handleCommand(this.events, userStreamOf(email), userDecider, command, CONCURRENT);
  }

  /**
   * A new password for the user: every session from before ends, everywhere. Returns the session
   * generation that starts (the one who changed it is issued a session in it).
   */
  async changePassword(email: string, userId: string, password: string): Promise<{ sessionGeneration: number }> {
    checkPassword(password);
    const passwordHash = await hashPassword(password);
    const command = { type: 'ChangePassword' as const, userId, passwordHash, now: this.clock() };
    const { state, events } = await handleCommand(this.events, userStreamOf(email), userDecider, command, CONCURRENT);
    const changed = events.reduce(evolveUser, state);
    return { sessionGeneration: changed.exists ? changed.sessionGeneration : 0 };
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

  /**
   * Removes a member (never the last owner), and ends their dashboard sessions everywhere. `by`:
   * the owner asking, absent for the operator.
   */
  async removeMember(orgId: string, userId: string, by?: string): Promise<void> {
    const command = { type: 'RemoveMember' as const, orgId, userId, by, now: this.clock() };
    const { state } = await handleCommand(this.events, organizationStream(orgId), organizationDecider, command, CONCURRENT);
    // Two streams, so two appends: were the second lost, the removed user's sessions would still
    // be refused this organization (the dashboard checks membership on every request).
    const email = state.members.get(userId)?.email;
    if (email === undefined) return;
    const end = { type: 'EndSessions' as const, userId, orgId, now: this.clock() };
    await handleCommand(this.events, userStreamOf(email), userDecider, end, CONCURRENT);
  }

  /** Whether a member (not an owner) may manage keys. `by`: the owner asking, absent for the operator. */
  async setMemberKeyAccess(orgId: string, userId: string, manageKeys: boolean, by?: string): Promise<void> {
    const command = { type: 'SetMemberKeyAccess' as const, orgId, userId, manageKeys, by, now: this.clock() };
    await handleCommand(this.events, organizationStream(orgId), organizationDecider, command, CONCURRENT);
  }

  /** Sets (or with null, clears) the rate limits of the organization's keys that have none of their own. */
  async setOrganizationRateLimits(orgId: string, rateLimits: RateLimits | null): Promise<RateLimits | null> {
    const command = { type: 'SetRateLimits' as const, orgId, rateLimits, now: this.clock() };
    const { events } = await handleCommand(this.events, organizationStream(orgId), organizationDecider, command, CONCURRENT);
    return (events[0] as OrganizationRateLimitsSet).data.rateLimits;
  }

  /**
   * The active key a secret names, or null: unknown, malformed, revoked and disabled all look the same.
   * An expired key throws `key_expired` (a 401 naming when it expired).
   */
  async authenticate(secret: string): Promise<KeyRecord | null> {
    if (!looksLikeKeySecret(secret)) return null;
    const hash = hashKeySecret(secret);
    let key = await this.keys.keyByHash(hash);
    if (key === null) {
      // Not yet, or not at all: a key just made elsewhere is in the log before it is here.
      await this.caughtUp();
      key = await this.keys.keyByHash(hash);
    }
    if (key === null) return null;
    const status = keyStatus(key, this.clock());
    // Only the secret's holder can ask, and an expiry is theirs to act on (a new key); a revoked or
    // disabled key stays as unknown as one that never was.
    if (status === 'expired' && key.expiresAt !== undefined)
      throw new IdentityRuleError('key_expired', `API key expired at ${new Date(key.expiresAt).toISOString()}`);
    return status === 'active' ? key : null;
  }
}

/** At least 8 characters of well-formed text (hashed as UTF-8, a lone surrogate would become U+FFFD: two passwords would be one). */
function checkPassword(password: string): void {
  if (password.length < 8) throw new IdentityRuleError('invalid_password', 'password must be at least 8 characters');
  if (!wellFormed(password)) throw new IdentityRuleError('invalid_password', 'password must be well-formed text');
}
