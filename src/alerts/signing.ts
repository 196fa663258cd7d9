import { createHmac, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Alerts are signed the Standard Webhooks way (https://www.standardwebhooks.com): headers
 * `webhook-id` (the alert's id, the same on every attempt), `webhook-timestamp` (seconds) and
 * `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, keyed by the bytes of
 * the organization's secret `whsec_<base64>`.
 *
 * An organization's secret is never stored: it is an HMAC of the server's secret (DASHBOARD_SECRET,
 * else the data directory's dashboard.secret, as for sessions: every instance has the same) and the
 * random id its issue recorded. So it can be shown when issued and the log holds nothing to steal.
 */
export class AlertSecrets {
  private constructor(private readonly serverSecret: Buffer) {}

  static fromEnvironment(dataDir: string, configured: string | undefined): AlertSecrets {
    if (configured) return new AlertSecrets(Buffer.from(configured, 'utf8'));
    mkdirSync(dataDir, { recursive: true });
    const file = join(dataDir, 'dashboard.secret');
    if (!existsSync(file)) {
      try {
        writeFileSync(file, randomBytes(32).toString('base64url'), { mode: 0o600, flag: 'wx' });
      } catch (error) {
        // Another process made it first: theirs is the one.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
    return new AlertSecrets(Buffer.from(readFileSync(file, 'utf8').trim(), 'utf8'));
  }

  /** The organization's signing secret for `secretId`, as receivers configure it: `whsec_<base64 of 32 bytes>`. */
  secretFor(orgId: string, secretId: string): string {
    const bytes = createHmac('sha256', this.serverSecret).update(`alerts-signing:${orgId}:${secretId}`).digest();
    return `whsec_${bytes.toString('base64')}`;
  }
}

export const newSecretId = (): string => randomBytes(16).toString('base64url');

/** The Standard Webhooks headers of a delivery of `body` as `id` at `timestampSeconds`, signed with `secret` (`whsec_…`). */
export function signedHeaders(secret: string, id: string, timestampSeconds: number, body: string): Record<string, string> {
  const key = Buffer.from(secret.slice('whsec_'.length), 'base64');
  const signature = createHmac('sha256', key).update(`${id}.${timestampSeconds}.${body}`).digest('base64');
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestampSeconds),
    'webhook-signature': `v1,${signature}`,
  };
}
