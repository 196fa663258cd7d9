import { timingSafeEqual } from 'node:crypto';

/**
 * Whether a secret someone sent (a session's MAC, a CSRF token) is the one expected, compared in
 * a time that does not depend on where they differ. Different lengths are simply not equal.
 */
export function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}
