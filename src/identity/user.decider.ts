import type { Decider } from '../eventstore/command-handler';
import { maskSecrets } from '../key-secret/key-secret';
import { wellFormed } from './checks';
import { IdentityRuleError } from './identity-rule-error';
import type { PasswordChanged, SessionsEnded, SignedOut, UserEvent, UserRegistered } from './identity.events';

/**
 * Users: one stream per email, so that an email is registered once; and their dashboard sessions'
 * end, recorded in that stream so that every instance reading the log refuses an ended session.
 */

export type User =
  | { exists: false }
  | {
      exists: true;
      userId: string;
      email: string;
      passwordHash: string;
      /** Sessions carry the generation they were issued in; a password change or a removal starts the next. */
      sessionGeneration: number;
      /** Sessions of this generation signed out (by their id). */
      signedOut: ReadonlySet<string>;
    };

export const initialUser = (): User => ({ exists: false });

/** A session as its cookie names it, for the check that it is still live. */
export interface SessionClaim {
  userId: string;
  sessionId: string;
  generation: number;
}

export function evolveUser(state: User, event: UserEvent): User {
  if (event.type === 'UserRegistered') {
    const { userId, email, passwordHash } = event.data;
    return { exists: true, userId, email, passwordHash, sessionGeneration: 0, signedOut: new Set() };
  }
  if (!state.exists) return state;
  switch (event.type) {
    case 'SignedOut':
      return { ...state, signedOut: new Set([...state.signedOut, event.data.sessionId]) };
    case 'PasswordChanged':
      return {
        ...state,
        passwordHash: event.data.passwordHash,
        sessionGeneration: state.sessionGeneration + 1,
        signedOut: new Set(),
      };
    case 'SessionsEnded':
      return { ...state, sessionGeneration: state.sessionGeneration + 1, signedOut: new Set() };
  }
}

/**
 * Whether a session is still live: its user's, of the user's current generation (no password change
 * or removal since it was issued), and not signed out. Its signature and expiry are checked before.
 */
export const sessionLive = (user: User, session: SessionClaim): boolean =>
  user.exists &&
  user.userId === session.userId &&
  user.sessionGeneration === session.generation &&
  !user.signedOut.has(session.sessionId);

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Emails are compared lower-cased and trimmed. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase();

export type UserCommand =
  | { type: 'RegisterUser'; userId: string; email: string; passwordHash: string; now: number }
  /** One session ends (the others go on). */
  | { type: 'SignOut'; session: SessionClaim; now: number }
  /** Every session of the user ends; the one that asked is issued anew, in the next generation. */
  | { type: 'ChangePassword'; userId: string; passwordHash: string; now: number }
  /** Every session of the user ends: removed from an organization (`orgId`). */
  | { type: 'EndSessions'; userId: string; orgId: string; now: number };

function theUser(state: User, userId: string): Extract<User, { exists: true }> {
  if (!state.exists || state.userId !== userId) throw new IdentityRuleError('user_not_found', 'no such user');
  return state;
}

export function decideUser(command: UserCommand, state: User): UserEvent[] {
  switch (command.type) {
    case 'RegisterUser': {
      const email = normalizeEmail(command.email);
      if (!EMAIL.test(email) || email.length > 254 || !wellFormed(email)) {
        throw new IdentityRuleError('invalid_email', `"${command.email}" is not an email address`);
      }
      // An email is who someone is (the stream is named by it): one holding a key secret is refused, not masked.
      if (maskSecrets(email) !== email) throw new IdentityRuleError('invalid_email', 'an email address must not hold an API key');
      if (state.exists) throw new IdentityRuleError('user_exists', `a user with email ${email} already exists`);
      const event: UserRegistered = {
        type: 'UserRegistered',
        data: { userId: command.userId, email, passwordHash: command.passwordHash, registeredAt: command.now },
      };
      return [event];
    }
    case 'SignOut': {
      const { session } = command;
      // A session already ended (signed out twice, or ended since) needs nothing more.
      if (!sessionLive(state, session)) return [];
      const event: SignedOut = {
        type: 'SignedOut',
        data: { userId: session.userId, sessionId: session.sessionId, signedOutAt: command.now },
      };
      return [event];
    }
    case 'ChangePassword': {
      theUser(state, command.userId);
      const event: PasswordChanged = {
        type: 'PasswordChanged',
        data: { userId: command.userId, passwordHash: command.passwordHash, changedAt: command.now },
      };
      return [event];
    }
    case 'EndSessions': {
      theUser(state, command.userId);
      const event: SessionsEnded = {
        type: 'SessionsEnded',
        data: { userId: command.userId, orgId: command.orgId, reason: 'member_removed', endedAt: command.now },
      };
      return [event];
    }
  }
}

export const userDecider: Decider<UserCommand, User, UserEvent> = {
  decide: decideUser,
  evolve: evolveUser,
  initialState: initialUser,
};
