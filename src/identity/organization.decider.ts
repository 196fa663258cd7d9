import type { Decider } from '../eventstore/command-handler';
import { checkName, checkRateLimits } from './checks';
import { IdentityRuleError } from './identity-rule-error';
import {
  MemberAdded,
  MemberKeyAccessSet,
  MemberRemoved,
  MemberRole,
  OrganizationCreated,
  OrganizationEvent,
  OrganizationRateLimitsSet,
  RateLimits,
} from './identity.events';

/** Organizations and their members. */

export interface Membership {
  role: MemberRole;
  manageKeys: boolean;
  /** The user's email, whose stream ends their sessions when they are removed (absent in events from before members were listed). */
  email?: string;
}

export interface Organization {
  exists: boolean;
  name: string;
  members: ReadonlyMap<string, Membership>;
}

export const initialOrganization = (): Organization => ({ exists: false, name: '', members: new Map() });

/** Owners manage everything; a member manages keys only when an owner allowed it. */
export const mayManageKeys = (member: Pick<Membership, 'role' | 'manageKeys'> | undefined): boolean =>
  member !== undefined && (member.role === 'owner' || member.manageKeys);

/**
 * Billing (statements, the ledger and its export, the FOCUS export, alerts) is the owners' to see:
 * members see usage, not the books. Seeing, not moving: credit notes are the operator's alone (an
 * owner is whoever signed up and made the organization).
 */
export const mayManageBilling = (member: Pick<Membership, 'role'> | undefined): boolean => member?.role === 'owner';

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
      return withMember(state, event.data.userId, {
        role: event.data.role,
        manageKeys: event.data.manageKeys === true,
        ...(event.data.email === undefined ? {} : { email: event.data.email }),
      });
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
