import { randomBytes } from 'node:crypto';

/** The Redis the tests use, or null when none could be had (the tests are then skipped). */
export const testRedisUrl = (): string | null => process.env.TEST_REDIS_URL || null;

/** A key prefix unique to this run and this use, so tests never touch each other's keys. */
export const uniquePrefix = (label: string): string =>
  `mgtest:${process.env.TEST_RUN_ID ?? 'local'}:${label}:${randomBytes(3).toString('hex')}:`;

/** `describe`, or `describe.skip` when no Redis is available (never under CI: setup fails first). */
export const describeWithRedis = (name: string, fn: () => void) =>
  (testRedisUrl() ? describe : describe.skip)(`${name} [Redis]`, fn);
