import { createHash, hash, randomBytes, scrypt as scryptCallback, timingSafeEqual } from 'node:crypto';
import { promisify } from 'node:util';
import { KEY_SECRET_PREFIX } from '../key-secret/key-secret';

export { KEY_SECRET_PREFIX };

const scrypt = promisify(scryptCallback) as (
  password: string,
  salt: Buffer,
  length: number,
  options: { N: number; r: number; p: number; maxmem: number },
) => Promise<Buffer>;

const KEY_SECRET = /^sk-svc-[A-Za-z0-9_-]{43,}$/;

/** A new API key secret: `sk-svc-` and 32 random bytes in base64url (256 bits). */
export const newKeySecret = (): string => KEY_SECRET_PREFIX + randomBytes(32).toString('base64url');

export const looksLikeKeySecret = (text: string): boolean => KEY_SECRET.test(text);

/** Secrets carry 256 random bits, so one SHA-256 is a safe lookup hash (one-shot: it runs on every request). */
export const hashKeySecret = (secret: string): string => hash('sha256', secret, 'hex');

/** What people see of a key to recognise it: never enough to use it. */
export const keyPrefixOf = (secret: string): string => secret.slice(0, KEY_SECRET_PREFIX.length + 6);

export const emailDigest = (normalizedEmail: string): string =>
  createHash('sha256').update(normalizedEmail).digest('hex').slice(0, 32);

const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };

/** scrypt with a random salt, encoded `scrypt$N$r$p$salt$hash` so parameters can change later. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(password, salt, 32, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, encoded: string): Promise<boolean> {
  const [scheme, N, r, p, salt, hash] = encoded.split('$');
  if (scheme !== 'scrypt') return false;
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(password, Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(N),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return timingSafeEqual(expected, actual);
}
