import type { LimitReset, RateLimits } from '../identity/identity.events';
import { type KeyRecord, keyStatus } from '../identity/key-lookup';
import { creditsNumber } from '../ledger/money';
import type { TokenClass } from '../ledger/ledger.events';
import type { RequestLogEntry } from '../projections/read-models';

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

/**
 * OpenRouter's `rate_limit` (its legacy field, required in its key's shape): the requests a minute
 * the key may make, or -1 (OpenRouter's "none") when it has no such limit. `rate_limits` says more.
 */
const requestRateLimit = (limits: RateLimits | undefined) => ({
  requests: limits?.requestsPerMinute ?? -1,
  interval: '1m',
  note: 'requests per minute (-1: no limit); rate_limits has the tokens per minute and where the limits come from',
});

/**
 * The calling key as GET /api/v1/key shows it: OpenRouter's shape, with ours beside it. `usedIn`:
 * what the key has used in the current period of each kind of reset (UTC day, week from Monday,
 * month; `never`: in all), counted as its credit limit counts (charges, and holds in flight).
 * There is no bring-your-own-key here and no free tier: those are none.
 */
export function keyView(key: KeyRecord, organizationDefault: RateLimits | undefined, usedIn: Record<LimitReset, number>) {
  const rateLimits = key.rateLimits ?? organizationDefault;
  const inLimitPeriod = key.limit ? usedIn[key.limit.reset] : 0;
  return {
    ...keyBase(key),
    usage_daily: creditsNumber(usedIn.daily),
    usage_weekly: creditsNumber(usedIn.weekly),
    usage_monthly: creditsNumber(usedIn.monthly),
    byok_usage: 0,
    byok_usage_daily: 0,
    byok_usage_weekly: 0,
    byok_usage_monthly: 0,
    include_byok_in_limit: false,
    is_free_tier: false,
    is_management_key: key.kind === 'management',
    is_provisioning_key: key.kind === 'management',
    creator_user_id: null,
    limit_usage: key.limit ? creditsNumber(inLimitPeriod) : null,
    limit_remaining: key.limit ? creditsNumber(Math.max(0, key.limit.amount - inLimitPeriod)) : null,
    rate_limit: requestRateLimit(rateLimits),
    rate_limits: rateLimits ? { ...rateLimitsView(rateLimits), source: key.rateLimits ? 'key' : 'organization' } : null,
  };
}

/** A key as the management API shows it: its own rate limits, status and last use too. */
export const managedKeyView = (key: KeyRecord) => ({
  ...keyBase(key),
  status: keyStatus(key),
  rate_limits: key.rateLimits ? rateLimitsView(key.rateLimits) : null,
  last_used_at: key.lastUsedAt === null ? null : new Date(key.lastUsedAt).toISOString(),
});

/** Whose count each token class of a charge is: the host's, or the gateway's own estimate. */
const provenanceOf = (e: RequestLogEntry) => {
  const of = (tokenClass: TokenClass) => (e.estimated?.includes(tokenClass) ? 'gateway_estimate' : 'host');
  return {
    input: of('input'),
    cache_read: of('cacheRead'),
    cache_write: of('cacheWrite'),
    cache_write_1h: of('cacheWrite1h'),
    output: of('output'),
  };
};

/**
 * One request of the request log as GET /api/v1/generation shows it; `refunded`: nano-credits its
 * credit notes returned (the cost stays what was charged; `net_cost` is what remains).
 */
export const generationView = (e: RequestLogEntry, refunded = 0) => ({
  id: e.requestId,
  reservation_id: e.reservationId,
  created_at: new Date(e.time).toISOString(),
  surface: e.surface,
  model: e.model,
  host: e.host,
  key_id: e.keyId,
  status: e.status,
  latency_ms: e.latencyMs,
  tokens: { input: e.inputTokens, cache_read: e.cacheReadTokens, cache_write: e.cacheWriteTokens, output: e.outputTokens },
  // Uses of tools the host ran itself, billed per use (`{"web_search": 3}`): {} when none.
  hosted_tool_uses: Object.fromEntries(
    Object.entries(e.hostedToolUses ?? {}).map(([toolClass, n]) => [
      toolClass.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`),
      n,
    ]),
  ),
  cost: creditsNumber(e.cost),
  cost_nano: e.cost,
  refunded: creditsNumber(refunded),
  refunded_nano: refunded,
  net_cost: creditsNumber(e.cost - refunded),
  // Per token class, whose count was billed: the host's, or the gateway's estimate (a count the host did not give or that failed the checks).
  provenance: provenanceOf(e),
  // OpenRouter's names for what the request log knows.
  total_cost: creditsNumber(e.cost),
  usage: creditsNumber(e.cost),
  request_id: e.requestId,
  upstream_id: e.upstreamId ?? null,
  // Hosted tools left out of the call, no serving host running them: [] when none.
  omitted_tools: e.omittedTools ?? [],
  // Every host call on the way (retries and hosts passed over included): [] for a request recorded before them.
  attempts: (e.attempts ?? []).map((a) => ({
    host: a.host,
    credential: a.credential,
    status: a.status,
    reason: a.reason,
    duration_ms: a.durationMs,
  })),
  // The catalogue version its prices are from (see `ledger audit`): null when not recorded.
  catalogue_version: e.catalogueVersion ?? null,
  provider_name: e.host,
  latency: e.latencyMs,
  tokens_prompt: e.inputTokens + e.cacheReadTokens + e.cacheWriteTokens,
  tokens_completion: e.outputTokens,
  native_tokens_prompt: e.inputTokens + e.cacheReadTokens + e.cacheWriteTokens,
  native_tokens_completion: e.outputTokens,
  native_tokens_cached: e.cacheReadTokens,
  is_byok: false,
});
