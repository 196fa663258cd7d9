import type { RateLimits } from '../identity/identity.events';
import { type KeyRecord, keyStatus } from '../identity/key-lookup';
import { creditsNumber } from '../ledger/money';
import type { RequestLogEntry } from '../projections/read-model';

/** What every view of a key shows (never its secret): who it is, what it has spent, its limit, its expiry. */
function keyBase(key: KeyRecord) {
  return {
    id: key.keyId,
    name: key.name,
    label: `${key.prefix}…`,
    usage: creditsNumber(key.spent ?? 0),
    limit: key.limit ? creditsNumber(key.limit.amount) : null,
    limit_reset: key.limit ? key.limit.reset : null,
    expires_at: key.expiresAt === undefined ? null : new Date(key.expiresAt).toISOString(),
    created_at: new Date(key.createdAt).toISOString(),
  };
}

const rateLimitsView = (limits: RateLimits) => ({
  requests_per_minute: limits.requestsPerMinute ?? null,
  tokens_per_minute: limits.tokensPerMinute ?? null,
});

/** The calling key as GET /api/v1/key shows it (OpenRouter's shape where it has one); `usedInPeriod`: its limit's usage now. */
export function keyView(key: KeyRecord, organizationDefault: RateLimits | undefined, usedInPeriod: number) {
  const rateLimits = key.rateLimits ?? organizationDefault;
  return {
    ...keyBase(key),
    limit_usage: key.limit ? creditsNumber(usedInPeriod) : null,
    limit_remaining: key.limit ? creditsNumber(Math.max(0, key.limit.amount - usedInPeriod)) : null,
    rate_limits: rateLimits ? { ...rateLimitsView(rateLimits), source: key.rateLimits ? 'key' : 'organization' } : null,
    is_management: false,
  };
}

/** A key as the management API shows it: its own rate limits, status and last use too. */
export const managedKeyView = (key: KeyRecord) => ({
  ...keyBase(key),
  status: keyStatus(key),
  rate_limits: key.rateLimits ? rateLimitsView(key.rateLimits) : null,
  last_used_at: key.lastUsedAt === null ? null : new Date(key.lastUsedAt).toISOString(),
});

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
