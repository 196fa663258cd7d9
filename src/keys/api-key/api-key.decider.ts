import type { Decider } from '../../eventstore/command-handler';
import { checkName, checkRateLimits } from '../../identity/checks';
import { IdentityRuleError } from '../../identity/identity-rule-error';
import type { KeyLimit, LimitReset, RateLimits } from '../../identity/identity.events';
import { initialOrganization, mayManageKeys, type Organization } from '../../identity/organization.decider';
import type { ApiKeyCreated, ApiKeyEvent, KeyChanges, KeyMaker } from './api-key.events';

/**
 * An API key: who may make, change and revoke it, and what it may be made with. Decided on the key's
 * stream and on the state of the organization the asker acts in; every rule of who may manage which
 * key is here, and the front doors (the dashboard, the management API, the operator tool) only ask.
 */

/**
 * Who asks: a signed-in member (the dashboard), a management key (the management API) or the
 * operator (the operator tool).
 */
export type KeyActor =
  { kind: 'member'; userId: string } | { kind: 'management_key'; keyId: string; orgId: string } | { kind: 'operator' };

export const OPERATOR: KeyActor = { kind: 'operator' };

/**
 * Who asks, and the organization it acts in. Only the operator may name no organization (a key by
 * its id alone): it acts in every one.
 */
export interface Asker {
  actor: KeyActor;
  orgId: string | null;
}

export type ApiKey =
  | { status: 'none' }
  | {
      status: 'active' | 'revoked';
      keyId: string;
      orgId: string;
      hash: string;
      limit: KeyLimit | null;
      kind?: 'management';
    };

export const initialApiKey = (): ApiKey => ({ status: 'none' });

export function evolveApiKey(state: ApiKey, event: ApiKeyEvent): ApiKey {
  if (event.type === 'ApiKeyCreated') {
    const { keyId, orgId, hash, limit, kind } = event.data;
    return { status: 'active', keyId, orgId, hash, limit: limit ?? null, ...(kind ? { kind } : {}) };
  }
  if (state.status === 'none') return state;
  if (event.type === 'ApiKeyUpdated') {
    return event.data.changes.limit === undefined ? state : { ...state, limit: event.data.changes.limit };
  }
  return { ...state, status: 'revoked' };
}

/**
 * Whether the asker sees a key (and so may manage it): one of the organization it acts in — another
 * organization's key is as unknown as one that never was — and, to a management key, an ordinary
 * one only (a management key is unknown to every management key, itself included).
 */
export function keyVisibleTo(asker: Asker, key: { orgId: string; kind?: 'management' }): boolean {
  if (asker.orgId === null) return asker.actor.kind === 'operator';
  if (key.orgId !== asker.orgId) return false;
  return !(asker.actor.kind === 'management_key' && key.kind === 'management');
}

/** A key the asker does not see, in the words each asker has always been given. */
export function keyNotFound(asker: Asker, keyId: string): IdentityRuleError {
  const id = keyId.slice(0, 64);
  switch (asker.actor.kind) {
    case 'operator':
      return new IdentityRuleError('key_not_found', `no key ${id}`);
    case 'management_key':
      return new IdentityRuleError('key_not_found', `no key ${id} in this organization`);
    case 'member':
      return new IdentityRuleError('key_not_found', 'no such key in this organization');
  }
}

/**
 * The asker may manage keys in the organization it acts in (`organization`, that organization's
 * state): its owners and the members they allow; a management key in its own organization only;
 * the operator in any.
 */
function checkMayManage(asker: Asker, organization: Organization): void {
  const { actor } = asker;
  if (actor.kind === 'member' && !mayManageKeys(organization.members.get(actor.userId))) {
    throw new IdentityRuleError('not_key_manager', "only the organization's owners, and members they allow, manage its keys");
  }
  if (actor.kind === 'management_key' && actor.orgId !== asker.orgId) {
    throw new IdentityRuleError('not_key_manager', "a management key manages its own organization's keys only");
  }
}

/**
 * A management key reaches what the dashboard shows owners only (the alerts webhook, the ledger, the
 * FOCUS export): its owners make them, and the operator; not the members they allow to manage keys,
 * nor a management key.
 */
function checkMayMakeManagementKey(actor: KeyActor, organization: Organization, what: 'make' | 'change' = 'make'): void {
  if (actor.kind === 'management_key')
    throw new IdentityRuleError('not_key_manager', 'a management key manages ordinary keys only: it cannot make another');
  if (actor.kind === 'member' && organization.members.get(actor.userId)?.role !== 'owner')
    throw new IdentityRuleError('not_owner', `only the organization's owners ${what} management keys`);
}

export const BILLING_RIGHTS_OPERATOR_ONLY =
  "billing rights (issuing credit notes) are given by the gateway's operator only: model-gateway keys create --management --billing";

/** The maker a key's creation records. */
function makerOf(actor: KeyActor): KeyMaker {
  switch (actor.kind) {
    case 'operator':
      return { kind: 'operator' };
    case 'member':
      return { kind: 'member', userId: actor.userId };
    case 'management_key':
      return { kind: 'management_key', keyId: actor.keyId };
  }
}

/**
 * Whether a key may issue credit notes: a management key made with billing rights by the operator.
 * Billing rights an owner gave in the dashboard (which it once could) count for nothing; nor do any
 * in an event from before makers were recorded, which cannot tell the operator's from an owner's.
 */
export const hasBillingRights = (created: ApiKeyCreated['data']): boolean =>
  created.kind === 'management' && created.billing === true && created.createdBy?.kind === 'operator';

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

export interface CreateApiKey extends Asker {
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
  /** Billing rights, for a management key only, given by the operator only. */
  billing?: true;
  now: number;
}

export interface UpdateApiKey extends Asker {
  type: 'UpdateApiKey';
  keyId: string;
  changes: KeyChangesAsked;
  now: number;
}

export interface RevokeApiKey extends Asker {
  type: 'RevokeApiKey';
  keyId: string;
  now: number;
}

export type ApiKeyCommand = CreateApiKey | UpdateApiKey | RevokeApiKey;

function create(command: CreateApiKey, state: ApiKey, organization: Organization): ApiKeyEvent[] {
  if (state.status !== 'none') throw new IdentityRuleError('key_exists', 'key already exists');
  if (!organization.exists) throw new IdentityRuleError('organization_not_found', `no organization ${command.orgId}`);
  checkMayManage(command, organization);
  if (command.kind === 'management') checkMayMakeManagementKey(command.actor, organization);
  if (command.billing === true) {
    if (command.kind !== 'management')
      throw new IdentityRuleError('invalid_key_rights', 'billing rights are for a management key only');
    // Credit notes move an organization's money: the gateway's staff issue them, never a customer.
    if (command.actor.kind !== 'operator') throw new IdentityRuleError('not_key_manager', BILLING_RIGHTS_OPERATOR_ONLY);
  }
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
        ...(command.billing === true ? { billing: true as const } : {}),
        createdBy: makerOf(command.actor),
      },
    },
  ];
}

/** The key a change or a revocation is about: the asker may manage keys where it acts, and sees this one. */
function keyAsked(command: UpdateApiKey | RevokeApiKey, state: ApiKey, organization: Organization) {
  checkMayManage(command, organization);
  if (state.status === 'none' || !keyVisibleTo(command, state)) throw keyNotFound(command, command.keyId);
  return state;
}

function update(command: UpdateApiKey, state: ApiKey, organization: Organization): ApiKeyEvent[] {
  const key = keyAsked(command, state, organization);
  // Changed by owners only, as made: a member who manages keys could otherwise enable again (or
  // give back a later expiry to) a management key an owner had stopped. Revoking, which only
  // takes power away, stays theirs.
  if (key.kind === 'management' && command.actor.kind === 'member')
    checkMayMakeManagementKey(command.actor, organization, 'change');
  if (key.status === 'revoked') throw new IdentityRuleError('key_revoked', 'key is revoked: it cannot be changed');
  const { keyId, orgId, hash } = key;
  return [
    {
      type: 'ApiKeyUpdated',
      data: { keyId, orgId, hash, changes: checkChanges(command.changes, command.now, key.limit), updatedAt: command.now },
    },
  ];
}

function revoke(command: RevokeApiKey, state: ApiKey, organization: Organization): ApiKeyEvent[] {
  const key = keyAsked(command, state, organization);
  if (key.status === 'revoked') throw new IdentityRuleError('key_revoked', 'key is already revoked');
  return [{ type: 'ApiKeyRevoked', data: { keyId: key.keyId, orgId: key.orgId, hash: key.hash, revokedAt: command.now } }];
}

/** `organization`: the state of the organization the asker acts in (for the operator naming none, the key's own). */
export function decideApiKey(command: ApiKeyCommand, state: ApiKey, organization: Organization): ApiKeyEvent[] {
  switch (command.type) {
    case 'CreateApiKey':
      return create(command, state, organization);
    case 'UpdateApiKey':
      return update(command, state, organization);
    case 'RevokeApiKey':
      return revoke(command, state, organization);
  }
}

/** The decider for keys, as seen from one organization's state (read from its stream). */
export const apiKeyDecider = (
  organization: Organization = initialOrganization(),
): Decider<ApiKeyCommand, ApiKey, ApiKeyEvent> => ({
  decide: (command, state) => decideApiKey(command, state, organization),
  evolve: evolveApiKey,
  initialState: initialApiKey,
});
