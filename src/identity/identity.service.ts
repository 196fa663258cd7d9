import { randomUUID } from 'node:crypto';
import type { EventStore, ExpectedRevision, RecordedEvent } from '../eventstore/event-store';
import type { ProjectionStore } from '../projections/projection-store';
import type { KeyRecord } from '../projections/read-model';
import {
  ApiKey,
  decideApiKey,
  decideOrganization,
  decideUser,
  evolveApiKey,
  evolveOrganization,
  evolveUser,
  IdentityRuleError,
  initialApiKey,
  initialOrganization,
  initialUser,
  normalizeEmail,
  Organization,
  User,
} from './identity.decider';
import {
  ApiKeyCreated,
  ApiKeyRevoked,
  apiKeyStream,
  OrganizationCreated,
  OrganizationEvent,
  organizationStream,
  UserRegistered,
  userStream,
} from './identity.events';
import { emailDigest, hashKeySecret, hashPassword, keyPrefixOf, looksLikeKeySecret, newKeySecret } from './secrets';

type Clock = () => number;

const expectedAfter = (stream: RecordedEvent[]): ExpectedRevision => (stream.length === 0 ? 'no_stream' : stream.length - 1);

function fold<S, E>(stream: RecordedEvent[], evolve: (s: S, e: E) => S, initial: S): S {
  return stream.reduce((state, e) => evolve(state, e as unknown as E), initial);
}

export interface CreatedKey {
  keyId: string;
  /** Shown once, to whoever created the key; only its hash is kept. */
  secret: string;
  orgId: string;
  name: string;
  prefix: string;
}

/** Organizations, users, members and API keys: command handlers over their streams. */
export class IdentityService {
  constructor(
    private readonly events: EventStore,
    private readonly projections: ProjectionStore,
    private readonly clock: Clock = Date.now,
  ) {}

  async organization(orgId: string): Promise<{ stream: RecordedEvent[]; state: Organization }> {
    const stream = await this.events.readStream(organizationStream(orgId));
    return { stream, state: fold<Organization, OrganizationEvent>(stream, evolveOrganization, initialOrganization()) };
  }

  async createOrganization(name: string): Promise<{ orgId: string; name: string }> {
    const orgId = randomUUID();
    const events = decideOrganization({ type: 'CreateOrganization', orgId, name, now: this.clock() }, initialOrganization());
    await this.events.append(organizationStream(orgId), events, 'no_stream');
    return { orgId, name: (events[0] as OrganizationCreated).data.name };
  }

  async user(email: string): Promise<{ stream: RecordedEvent[]; state: User }> {
    const stream = await this.events.readStream(userStream(emailDigest(normalizeEmail(email))));
    return { stream, state: fold<User, UserRegistered>(stream, evolveUser, initialUser()) };
  }

  async registerUser(email: string, password: string): Promise<{ userId: string; email: string }> {
    if (password.length < 8) throw new IdentityRuleError('invalid_password', 'password must be at least 8 characters');
    const { stream, state } = await this.user(email);
    const userId = randomUUID();
    // Decide before hashing so a duplicate email fails fast; the append re-checks it.
    decideUser({ type: 'RegisterUser', userId, email, passwordHash: '', now: 0 }, state);
    const passwordHash = await hashPassword(password);
    const events = decideUser({ type: 'RegisterUser', userId, email, passwordHash, now: this.clock() }, state);
    await this.events.append(userStream(emailDigest(normalizeEmail(email))), events, expectedAfter(stream));
    return { userId, email: events[0].data.email };
  }

  async addMember(orgId: string, email: string, role: 'owner' | 'member' = 'member'): Promise<{ userId: string }> {
    const { state: user } = await this.user(email);
    if (!user.exists) throw new IdentityRuleError('user_not_found', `no user with email ${normalizeEmail(email)}`);
    const { stream, state } = await this.organization(orgId);
    const events = decideOrganization({ type: 'AddMember', orgId, userId: user.userId, role, now: this.clock() }, state);
    await this.events.append(organizationStream(orgId), events, expectedAfter(stream));
    return { userId: user.userId };
  }

  async createApiKey(orgId: string, name: string): Promise<CreatedKey> {
    const { state: organization } = await this.organization(orgId);
    const keyId = randomUUID();
    const secret = newKeySecret();
    const prefix = keyPrefixOf(secret);
    const events = decideApiKey(
      { type: 'CreateApiKey', keyId, orgId, name, hash: hashKeySecret(secret), prefix, now: this.clock() },
      initialApiKey(),
      organization,
    );
    await this.events.append(apiKeyStream(keyId), events, 'no_stream');
    return { keyId, secret, orgId, name: (events[0] as ApiKeyCreated).data.name, prefix };
  }

  async revokeApiKey(keyId: string): Promise<{ keyId: string; orgId: string }> {
    const stream = await this.events.readStream(apiKeyStream(keyId));
    const state = fold<ApiKey, ApiKeyCreated | ApiKeyRevoked>(stream, evolveApiKey, initialApiKey());
    const events = decideApiKey({ type: 'RevokeApiKey', keyId, now: this.clock() }, state, initialOrganization());
    await this.events.append(apiKeyStream(keyId), events, expectedAfter(stream));
    return { keyId, orgId: (events[0] as ApiKeyRevoked).data.orgId };
  }

  /** The active key a secret names, or null: unknown, malformed or revoked all look the same. */
  async authenticate(secret: string): Promise<KeyRecord | null> {
    if (!looksLikeKeySecret(secret)) return null;
    const key = await this.projections.keyByHash(hashKeySecret(secret));
    return key && key.revokedAt === null ? key : null;
  }
}
