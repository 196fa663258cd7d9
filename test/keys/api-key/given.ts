import type { OrganizationEvent } from '../../../src/identity/identity.events';
import { IdentityRuleError } from '../../../src/identity/identity-rule-error';
import { evolveOrganization, initialOrganization } from '../../../src/identity/organization.decider';
import {
  type ApiKeyCommand,
  decideApiKey,
  evolveApiKey,
  initialApiKey,
  type KeyActor,
} from '../../../src/keys/api-key/api-key.decider';
import type { ApiKeyCreated, ApiKeyEvent } from '../../../src/keys/api-key/api-key.events';

/**
 * Given/when/then for the key decider: given an organization's events (the one the asker acts in)
 * and a key's, when a command is decided, then these events, or this refusal.
 */
export function given(organization: OrganizationEvent[], key: ApiKeyEvent[] = []) {
  const orgState = organization.reduce(evolveOrganization, initialOrganization());
  const keyState = key.reduce(evolveApiKey, initialApiKey());
  return {
    when: (command: ApiKeyCommand) => {
      const decide = () => decideApiKey(command, keyState, orgState);
      return {
        then: (events: ApiKeyEvent[]) => expect(decide()).toEqual(events),
        thenRefused: (code: IdentityRuleError['code'], message?: string | RegExp) => {
          let refusal: unknown = null;
          try {
            decide();
          } catch (error) {
            refusal = error;
          }
          expect(refusal).toBeInstanceOf(IdentityRuleError);
          expect((refusal as IdentityRuleError).code).toBe(code);
          if (message !== undefined) expect((refusal as IdentityRuleError).message).toMatch(message);
        },
      };
    },
  };
}

/** Organization o1: an owner, a member allowed to manage keys, a member who only looks. */
export const acme: OrganizationEvent[] = [
  { type: 'OrganizationCreated', data: { orgId: 'o1', name: 'Acme', createdAt: 1 } },
  { type: 'MemberAdded', data: { orgId: 'o1', userId: 'owner', role: 'owner', addedAt: 1 } },
  { type: 'MemberAdded', data: { orgId: 'o1', userId: 'dev', role: 'member', addedAt: 1, manageKeys: true } },
  { type: 'MemberAdded', data: { orgId: 'o1', userId: 'viewer', role: 'member', addedAt: 1 } },
];

export const owner: KeyActor = { kind: 'member', userId: 'owner' };
export const allowed: KeyActor = { kind: 'member', userId: 'dev' };
export const viewer: KeyActor = { kind: 'member', userId: 'viewer' };
/** A management key of o1, and one of o2. */
export const platform: KeyActor = { kind: 'management_key', keyId: 'km', orgId: 'o1' };
export const otherPlatform: KeyActor = { kind: 'management_key', keyId: 'kn', orgId: 'o2' };

export const created = (keyId: string, orgId: string, extra: Partial<ApiKeyCreated['data']> = {}): ApiKeyCreated => ({
  type: 'ApiKeyCreated',
  data: { keyId, orgId, name: keyId, hash: `hash-${keyId}`, prefix: 'sk-svc-abcdef', createdAt: 1, ...extra },
});

/** An ordinary key of o1, the management key of o1, and an ordinary key of o2. */
export const k1 = [created('k1', 'o1')];
export const km = [created('km', 'o1', { kind: 'management' })];
export const k2 = [created('k2', 'o2')];

export const MAY_NOT_MANAGE = "only the organization's owners, and members they allow, manage its keys";
