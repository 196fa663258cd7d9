import type { RateLimits } from '../identity/identity.events';
import type { KeyRecord } from '../identity/key-lookup';
import { creditsNumber } from '../ledger/money';
import type { RequestLogEntry } from '../projections/read-model';

/** The calling key as GET /api/v1/key shows it (OpenRouter's shape where it has one); `usedInPeriod`: its limit's usage now. */
export function keyView(key: KeyRecord, organizationDefault: RateLimits | undefined, usedInPeriod: number) {
  const rateLimits = key.rateLimits ?? organizationDefault;
  const limit = key.limit;
  return {
    id: key.keyId,
    name: key.name,
    label: `${key.prefix}…`,
    usage: creditsNumber(key.spent ?? 0),
    limit: limit ? creditsNumber(limit.amount) : null,
    limit_reset: limit ? limit.reset : null,
    limit_usage: limit ? creditsNumber(usedInPeriod) : null,
    limit_remaining: limit ? creditsNumber(Math.max(0, limit.amount - usedInPeriod)) : null,
    rate_limits: rateLimits
      ? {
          requests_per_minute: rateLimits.requestsPerMinute ?? null,
          tokens_per_minute: rateLimits.tokensPerMinute ?? null,
          source: key.rateLimits ? 'key' : 'organization',
        }
      : null,
    expires_at: key.expiresAt === undefined ? null : new Date(key.expiresAt).toISOString(),
    created_at: new Date(key.createdAt).toISOString(),
    is_management: false,
  };
}

/** One request of the request log as GET /api/v1/generation shows it. */
export const generationView = (e: RequestLogEntry) => ({
  id: e.requestId,
  created_at: new Date(e.time).toISOString(),
  surface: e.surface,
  model: e.model,
  host: e.host,
  key_id: e.keyId,
  status: e.status,
  latency_ms: e.latencyMs,
  tokens: { input: e.inputTokens, cache_read: e.cacheReadTokens, cache_write: e.cacheWriteTokens, output: e.outputTokens },
  cost: creditsNumber(e.cost),
  cost_nano: e.cost,
});
