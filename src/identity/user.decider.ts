import type { Decider } from '../eventstore/command-handler';
import { maskSecrets } from '../key-secret/key-secret';
import { wellFormed } from './checks';
import { IdentityRuleError } from './identity-rule-error';
import type { UserRegistered } from './identity.events';

/** Users: one stream per email, so that an email is registered once. */

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
  if (!EMAIL.test(email) || email.length > 254 || !wellFormed(email)) {
    throw new IdentityRuleError('invalid_email', `"${command.email}" is not an email address`);
  }
  // An email is who someone is (the stream is named by it): one holding a key secret is refused, not masked.
  if (maskSecrets(email) !== email) throw new IdentityRuleError('invalid_email', 'an email address must not hold an API key');
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
