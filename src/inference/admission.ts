import { HOSTED_TOOL_CLASSES, type CanonicalRequest, type WireFormat } from '../canonical/canonical';
import { carriedToolsOf, decideHostedTools, runnableTools, withoutHostedTools } from '../canonical/hosted-tools';
import {
  heldPrices,
  passesWhole,
  servingHostOf,
  type CatalogueModel,
  type ModelHost,
  type ModelKind,
} from '../catalogue/catalogue';
import type { WireLimits } from '../hosts/host-kind';
import { HOST_KINDS } from '../hosts/hosts';
import { ApiError, ApiErrorCode } from '../http/api-error';
import { maskSecrets } from '../key-secret/key-secret';
import type { KeyLimit, LimitReset } from '../identity/identity.events';
import { resetsAt } from '../ledger/key-limit';
import { formatCredits, HostedToolCounts, HostedToolPrices, reservationFor, TokenPrices } from '../ledger/money';
import { NO_PREFERENCES, ProviderPreferences, Route, RouteContext, routeModels } from '../routing/plan';
import { estimateInputTokens } from './tokens';

/**
 * Admission, decided: what a request may reserve once its model is looked up, or why it is
 * turned away before anything is held. Pure: the shell looks the model up and asks the ledger.
 */

/** A request the ledger is asked to admit. */
export interface AdmissionPlan {
  kind: 'reserve';
  /** The hosted tools left out of the call (absent: none): the reply's header and the request log name them. */
  omittedTools?: string[];
  /** The betas left out of the call (absent: none; see withLongContextBeta): the reply's header and the request's log line name them. */
  omittedBetas?: string[];
  /** The model asked for (the first tried). */
  model: CatalogueModel;
  /** The hosts that may serve, in the order they are tried (routes' hosts): the first is called, the rest are fallbacks. */
  hosts: ModelHost[];
  /** The request as the first model's hosts get it: the output cap filled in, or lowered to the model's limit; reasoning only for a model that reasons. */
  request: CanonicalRequest;
  /**
   * Host by host, in the order tried: the model it serves (another after `models` fallback) and the
   * request as it gets it (its cap raised to the least the host takes, see flooredFor).
   */
  routes: PlannedRoute[];
  estimate: TokenEstimate;
  /**
   * The highest prices among the hosts of every model allowed (a fallback must stay covered), each
   * host's long-context band's when the estimated input is above its threshold.
   */
  prices: TokenPrices;
  /**
   * What to reserve (nano-credits): the estimated input at the dearest input price, the output cap
   * at the output price, and the most uses of each carried hosted tool at its price.
   */
  amount: number;
}

/** One host of one model as the attempt calls it, with the request as capped for that model. */
export interface PlannedRoute extends Route {
  request: CanonicalRequest;
}

/** How a request asks to be routed, and what the shell read for it: see routing/plan.ts. */
export interface RoutingPlanInput {
  preferences: ProviderPreferences;
  /** The `models` fallbacks as the catalogue found them (null: not in it), in order. */
  fallbacks: Array<{ requested: string; model: CatalogueModel | null }>;
  context: RouteContext;
}

/** Tokens expected before the call: the input estimated from its text, the output cap; the most hosted-tool uses held for. */
export interface TokenEstimate {
  inputTokens: number;
  outputTokens: number;
  hostedToolUses?: HostedToolCounts;
  /** The least cap a host that may serve takes, above 1 (flooredFor): a lower max_tokens would be raised to it. */
  leastOutputTokens?: number;
}

/** How admission rules on hosted tools: the most uses of each carried class a request may make, and where a refused one runs. */
export interface HostedToolsPolicy {
  maxUses: number;
  /** "models that run it: …" for the types a refusal names. */
  elsewhere?: (types: string[]) => string;
}

/** What admission is told beside the request: the hosted-tools policy and how the request asks to be routed. */
export type AdmissionOptions = Partial<HostedToolsPolicy & RoutingPlanInput>;

/** A request turned away before any reservation. */
export interface Refusal {
  kind: 'refuse';
  /** The model as the request log shows it: the slug when found, else what was asked for. */
  model: string;
  error: ApiError;
}

/**
 * The highest price of each class among the hosts that may serve (one host's own prices): a fallback
 * must stay covered. A host's prices are its long-context band's where the estimated prompt
 * (`estimatedPrompt` tokens) is above the band's threshold (see heldPrices).
 */
export const highestPrices = (hosts: ModelHost[], estimatedPrompt = 0): TokenPrices =>
  hosts
    .map((h) => heldPrices(h, estimatedPrompt))
    .reduce((highest, prices) => {
      const merged: TokenPrices = {
        input: Math.max(highest.input, prices.input),
        cacheRead: Math.max(highest.cacheRead, prices.cacheRead),
        cacheWrite: Math.max(highest.cacheWrite, prices.cacheWrite),
        cacheWrite1h: Math.max(highest.cacheWrite1h, prices.cacheWrite1h),
        output: Math.max(highest.output, prices.output),
      };
      const perUse: HostedToolPrices = {};
      for (const c of HOSTED_TOOL_CLASSES) {
        const a = highest.hostedToolUses?.[c];
        const b = prices.hostedToolUses?.[c];
        if (a !== undefined || b !== undefined) perUse[c] = Math.max(a ?? 0, b ?? 0);
      }
      if (Object.keys(perUse).length > 0) merged.hostedToolUses = perUse;
      return merged;
    });

/** The model asked for and the hosts that may serve it, in the catalogue's order. */
export interface Servable {
  kind: 'servable';
  model: CatalogueModel;
  hosts: ModelHost[];
}

/** The routes that serve each kind of model, as a refusal names them. */
const ROUTES_OF: Record<ModelKind, string> = {
  chat: 'the chat routes (POST /api/v1/chat/completions, /api/v1/messages, /api/v1/models/{model}/chat)',
  embedding: 'POST /api/v1/embeddings only',
};

/**
 * Given the model asked for (`requested`, a slug or UUID), what the catalogue found for it and
 * the kind of model the route serves: its usable hosts, or the refusal (unknown model, a model
 * of the other kind — saying which routes serve it —, or no configured host).
 */
export function servableModel(requested: string, model: CatalogueModel | null, route: ModelKind = 'chat'): Servable | Refusal {
  if (!model) {
    // What was asked for is echoed and recorded: a secret pasted into it is masked first.
    const asked = maskSecrets(requested);
    return refusal(asked, 'model_not_found', `model "${asked}" is not in the catalogue (GET /api/v1/models lists them)`);
  }
  if (model.kind !== route) {
    return refusal(
      model.slug,
      'invalid_request',
      `model "${model.slug}" is ${model.kind === 'embedding' ? 'an embedding' : 'a chat'} model: it is served by ${ROUTES_OF[model.kind]}`,
    );
  }
  const hosts = model.hosts.filter((h) => h.host.usable);
  if (hosts.length === 0) {
    return refusal(model.slug, 'model_not_found', `model "${model.slug}" is not available here: none of its hosts is configured`);
  }
  return { kind: 'servable', model, hosts };
}

/**
 * Given the model asked for, what the catalogue found for it, the client's request and how it
 * asks to be routed: the plan to reserve, or the refusal. The hosts are those the provider
 * preferences allow, of the model asked for and then of its `models` fallbacks; the hold covers
 * the dearest of them and the largest output cap any of them is sent.
 */
export function planAdmission(
  requested: string,
  catalogued: CatalogueModel | null,
  request: CanonicalRequest,
  options: AdmissionOptions = {},
): AdmissionPlan | Refusal {
  const { maxUses = 0, elsewhere, preferences = NO_PREFERENCES, fallbacks = [], context = {} } = options;
  const servable = servableModel(requested, catalogued);
  if (servable.kind === 'refuse') return servable;
  const models = [servable.model];
  for (const fallback of fallbacks) {
    // A fallback named wrong is the client's mistake, said now rather than found when it is needed.
    if (!fallback.model || fallback.model.kind !== 'chat') {
      const refused = servableModel(fallback.requested, fallback.model);
      const error = refused.kind === 'refuse' ? refused.error : new ApiError('invalid_request', 'bad fallback');
      return refusal(servable.model.slug, 'invalid_request', `models: ${error.message}`);
    }
    models.push(fallback.model);
  }
  // The input as any model gets it: nothing decided below (hosted tools left out, caps) changes the
  // text counted. The hold is sized by it, and routing takes each host's long-context band by it.
  const inputTokens = estimateInputTokens(request);
  const routed = routeModels(models, preferences, inputTokens, context);
  if (routed.kind === 'none') return noRoute(servable.model.slug, routed.reason);
  // A host whose API would refuse the request outright (too many stop sequences, a tool name it does
  // not take) is not tried; with none left, the client is told what to change.
  const broken = routed.routes.map((r) => brokenLimit(request, r.served));
  const open = routed.routes.filter((_, i) => broken[i] === null);
  if (open.length === 0) {
    const reasons = [...new Set(broken)].join('; ');
    return refusal(
      servable.model.slug,
      'invalid_request',
      `no host of model "${servable.model.slug}" takes this request: ${reasons}`,
    );
  }
  // The 1M-context beta, where no host left prices it, is left out of the request every host gets.
  const longContext = withLongContextBeta(request, open);
  const kept = longContext.routes;
  const hosts = kept.map((r) => r.served);
  const asked = longContext.request;
  const untranslatable = untranslatableTools(asked, hosts) ?? untranslatableFields(asked, hosts);
  if (untranslatable) return refusal(servable.model.slug, 'invalid_request', untranslatable);
  // Hosted tools are decided once for every host that may serve, whichever model it serves.
  const tooled = withHostedTools(asked, hosts, { maxUses, elsewhere });
  if ('refused' in tooled) return refusal(servable.model.slug, 'invalid_request', tooled.refused);
  const capped = new Map(models.map((model) => [model, cappedFor(model, tooled)]));
  const routes = kept.map((route) => ({ ...route, request: flooredFor(route.served, capped.get(route.model)!) }));
  const first = capped.get(servable.model)!;
  const carried = tooled.carriedTools;
  // The largest output cap among the models allowed.
  const least = Math.max(...routes.map((r) => leastOutputTokensOf(r.served)));
  const estimate: TokenEstimate = {
    inputTokens,
    outputTokens: Math.max(...routes.map((r) => r.request.maxTokens!)),
    ...(carried ? { hostedToolUses: Object.fromEntries(carried.classes.map((c) => [c, carried.maxUses])) } : {}),
    ...(least > 1 ? { leastOutputTokens: least } : {}),
  };
  const prices = highestPrices(hosts, estimate.inputTokens);
  const amount = reservationFor(estimate.inputTokens, estimate.outputTokens, prices, estimate.hostedToolUses);
  const omittedTools = tooled.omittedTools;
  const { omittedBetas } = longContext;
  return {
    kind: 'reserve',
    model: servable.model,
    hosts,
    request: first,
    routes,
    estimate,
    prices,
    amount,
    ...(omittedTools ? { omittedTools } : {}),
    ...(omittedBetas ? { omittedBetas } : {}),
  };
}

/**
 * What of a request only hosts taking its format whole can honour, and which of `hosts` would be sent
 * a translation (their ids): null when nothing such was asked or no host translates.
 */
function translatedDespite(
  asked: string[] | undefined,
  request: CanonicalRequest,
  hosts: ModelHost[],
): { asked: string[]; format: WireFormat; translating: string } | null {
  const format = request.original?.format;
  if (asked === undefined || asked.length === 0 || format === undefined) return null;
  const translating = [...new Set(hosts.filter((h) => !passesWhole(h, format)).map((h) => h.host.id))];
  return translating.length === 0 ? null : { asked, format, translating: translating.join(', ') };
}

/**
 * Why a request offering tools only its own format has (CanonicalRequest.wholeOnlyTools) cannot be
 * served: some host that may serve it would be sent a translation, which has no such tools. Null: every
 * host is sent the body whole (or there are none).
 */
function untranslatableTools(request: CanonicalRequest, hosts: ModelHost[]): string | null {
  const found = translatedDespite(request.wholeOnlyTools, request, hosts);
  if (found === null) return null;
  const { format, translating } = found;
  const tools = [...new Set(found.asked)].map((t) => `"${t}"`).join(', ');
  return `tools of type ${tools} are run by the client as the ${format} format defines them, and have no translation for host ${translating}, which is sent this request translated: use a model whose hosts take ${format} requests whole (the anthropic kind, or Claude on vertex), or offer the tool as a function with an input_schema`;
}

/**
 * Why a request asking for what only its own format's hosts honour (CanonicalRequest.wholeOnlyFields)
 * cannot be served: some host that may serve it would be sent a translation, which has no counterpart.
 * Null: every host is sent the body whole (or nothing such was asked).
 */
function untranslatableFields(request: CanonicalRequest, hosts: ModelHost[]): string | null {
  const found = translatedDespite(request.wholeOnlyFields, request, hosts);
  if (found === null) return null;
  const { asked, format, translating } = found;
  const them = asked.length > 1 ? 'them' : 'it';
  return `${asked.join(', ')}: only hosts that take ${format} requests whole honour ${them}, and host ${translating} is sent this request translated: leave ${them} out, or use a model whose hosts take ${format} requests whole`;
}

/** The field each format names its stop sequences by; the Gemini surface's (which keeps no original body) otherwise. */
const STOP_FIELD: Partial<Record<WireFormat, string>> = { 'chat-completions': 'stop', messages: 'stop_sequences' };

/** The field each format asks for structured output by; the Gemini surface's (which keeps no original body) otherwise. */
const OUTPUT_FORMAT_FIELD: Record<WireFormat, string> = {
  'chat-completions': 'response_format',
  messages: 'output_config.format',
  responses: 'text.format',
};

/** How the client asked for the structured output a host does not take, in its format's words. */
function outputFormatAsked(request: CanonicalRequest): string {
  const type = request.outputFormat?.type;
  const format = request.original?.format;
  if (format) return `${OUTPUT_FORMAT_FIELD[format]} ${type}`;
  return type === 'json_object'
    ? 'generationConfig.responseMimeType "application/json" without a schema'
    : 'generationConfig.responseJsonSchema';
}

/** Whether `served` is sent the client's body whole (a host of the client's format), rather than a translation. */
const sentWhole = (request: CanonicalRequest, served: ModelHost): boolean =>
  request.original !== undefined && passesWhole(served, request.original.format);

/**
 * Which of its kind's limits (HostKind.limits) `served` would refuse the request for, said for the
 * client: the field or the tool, the host and its limit; null when it keeps them all.
 */
function brokenLimit(request: CanonicalRequest, served: ModelHost): string | null {
  const { host } = served;
  const limits = limitsOf(served);
  const most = limits.stopSequences;
  if (most !== undefined && request.stop.length > most) {
    const field = (request.original && STOP_FIELD[request.original.format]) ?? 'generationConfig.stopSequences';
    return `${field} has ${request.stop.length} stop sequences, and host ${host.id} takes at most ${most}`;
  }
  const names = limits.toolNames;
  const named = names && request.tools.find((t) => !names.pattern.test(t.name));
  if (names && named) return `tool "${named.name}": host ${host.id} takes tool names of ${names.rule}`;
  const formats = limits.outputFormats;
  const asked = request.outputFormat?.type;
  if (formats && asked !== undefined && !formats.takes.includes(asked))
    return `${outputFormatAsked(request)}: host ${host.id} takes structured output only as ${formats.takes.join(' or ')} (its ${formats.field})`;
  const word = asked === 'json_object' ? formats?.jsonModeNeedsTheWord : undefined;
  if (word && !word.says(request, sentWhole(request, served)))
    return `${outputFormatAsked(request)}: host ${host.id} takes JSON mode only when ${word.where} say "JSON" (say it, or give a schema)`;
  if (formats?.notWithFunctionTools && asked !== undefined && request.tools.length > 0)
    return `${outputFormatAsked(request)} with function tools: host ${host.id} (${served.model}) takes structured output only without them`;
  return null;
}

/** What `served`'s API takes (its kind's HostKind.limits for its model): none stated, nothing held to. */
const limitsOf = (served: ModelHost): WireLimits =>
  HOST_KINDS[served.host.kind].limits?.(served.model, served.host.settings, served.host.baseUrl) ?? {};

/**
 * The routes and the request as the long-context beta leaves them. A host taking the beta (its
 * kind's prefix, WireLimits.longContextBeta: Anthropic's `context-1m-…`) lets a prompt past its
 * usual window in and bills every token of it at its long-context price, which only a catalogue
 * entry with a band (`longContext`) charges. So: with such a host among the routes, the hosts that
 * would take the beta without a band are not tried; with none, the beta is left out of the call
 * (`omittedBetas`, the other betas kept): each host keeps the prompt to its usual window, where its
 * base price is the host's own. Hosts the betas never reach (other kinds) serve either way.
 */
function withLongContextBeta(
  request: CanonicalRequest,
  routes: Route[],
): { routes: Route[]; request: CanonicalRequest; omittedBetas?: string[] } {
  const longContextBetas = ({ served }: Route): string[] => {
    const prefix = limitsOf(served).longContextBeta;
    return prefix === undefined ? [] : (request.betas ?? []).filter((b) => b.startsWith(prefix));
  };
  const taking = routes.filter((r) => longContextBetas(r).length > 0);
  if (taking.length === 0) return { routes, request };
  const priced = (r: Route) => r.served.bands.length > 0;
  if (taking.some(priced)) return { routes: routes.filter((r) => priced(r) || !taking.includes(r)), request };
  const omittedBetas = [...new Set(taking.flatMap(longContextBetas))];
  const betas = request.betas!.filter((b) => !omittedBetas.includes(b));
  return { routes, request: { ...request, betas }, omittedBetas };
}

/**
 * The request with its hosted tools decided on for the hosts that may serve: those every host runs
 * carried (bounded to the policy's uses), the others left out (and out of the body a host of the
 * client's format is sent whole), or the refusal of a request requiring one they do not run.
 */
function withHostedTools(
  request: CanonicalRequest,
  hosts: ModelHost[],
  policy: HostedToolsPolicy,
): CanonicalRequest | { refused: string } {
  const asked = request.hostedTools;
  if (asked === undefined || asked.hosted.length === 0) return request;
  const format = request.original?.format;
  const runnable = runnableTools(asked.hosted, format, hosts.map(servingHostOf), asked.clientTools);
  const decision = decideHostedTools(asked, runnable, policy.elsewhere);
  if ('refused' in decision) return decision;
  const carriedTools = carriedToolsOf(asked, decision.carried, policy.maxUses);
  const { omitted } = decision;
  const decided: CanonicalRequest = { ...request };
  if (carriedTools) decided.carriedTools = carriedTools;
  if (omitted.length > 0) {
    decided.omittedTools = omitted;
    if (request.original)
      decided.original = {
        format: request.original.format,
        body: withoutHostedTools(request.original.format, request.original.body, omitted),
      };
    // With every tool left out there is no choice to make (hosts refuse a tool_choice without tools).
    if (request.tools.length === 0 && carriedTools === null) delete decided.toolChoice;
  }
  return decided;
}

/**
 * The request as `model`'s hosts get it: the client's output cap, lowered to the model's limit
 * when above it (agents send one cap, e.g. 32000, whatever the model), or the model's limit when
 * none was given; reasoning asked for in another format's terms only for a model that reasons.
 */
const cappedFor = (model: CatalogueModel, request: CanonicalRequest): CanonicalRequest => ({
  ...request,
  maxTokens: Math.min(request.maxTokens ?? model.maxOutputTokens, model.maxOutputTokens),
  reasoning: model.reasoning ? request.reasoning : undefined,
});

/**
 * The request as one host is sent it: its cap raised to the least the host's kind takes (OpenAI's
 * Responses API: 16, where a messages client may ask for 1). The host may produce that many, so the
 * hold (the largest cap among the routes) and the check of the host's count are of the cap sent.
 */
function flooredFor(served: ModelHost, request: CanonicalRequest): CanonicalRequest {
  const least = leastOutputTokensOf(served);
  return request.maxTokens! >= least ? request : { ...request, maxTokens: least };
}

const leastOutputTokensOf = (served: ModelHost): number =>
  HOST_KINDS[served.host.kind].minOutputTokens?.(served.host.settings) ?? 1;

/** No host left by the provider preferences: a 402 naming max_price when the price limit took them out, else a 404. */
function noRoute(model: string, reason: 'max_price' | 'preferences'): Refusal {
  if (reason === 'max_price') {
    const error = new ApiError(
      'insufficient_credits',
      `no host of model "${model}" is within provider.max_price: raise max_price, or leave it out`,
    ).as('max_price');
    return { kind: 'refuse', model, error };
  }
  return refusal(
    model,
    'not_found',
    `no host of model "${model}" is allowed by the provider preferences (order, only, ignore, allow_fallbacks): hosts are named by their catalogue ids`,
  );
}

const refusal = (model: string, code: ApiErrorCode, message: string): Refusal => ({
  kind: 'refuse',
  model,
  error: new ApiError(code, message),
});

const PER: Record<LimitReset, string> = { never: '', daily: 'daily ', weekly: 'weekly ', monthly: 'monthly ' };

/**
 * The 402 for a request the ledger did not admit: the key's limit when that is what stopped it,
 * else the organization's balance (`insufficient`, the surface's own count of what it could afford).
 */
export function ledgerRefusal(
  refused: { available: number; keyRemaining?: number },
  keyLimit: KeyLimit | undefined,
  amount: number,
  insufficient: (available: number) => ApiError,
): ApiError {
  return refused.keyRemaining !== undefined && keyLimit
    ? keyLimitReached(keyLimit, refused.keyRemaining, amount, Date.now())
    : insufficient(refused.available);
}

/** The 402 for a key whose credit limit does not cover the request: the limit, what remains, when it resets. */
export function keyLimitReached(limit: KeyLimit, remaining: number, amount: number, now: number): ApiError {
  const reset = resetsAt(limit.reset, now);
  return new ApiError(
    'insufficient_credits',
    `key limit reached: this key's ${PER[limit.reset]}limit is ${formatCredits(limit.amount)} credits and ${formatCredits(remaining)} remain` +
      `${reset === null ? '' : ` until ${new Date(reset).toISOString()}`}; this request holds up to ${formatCredits(amount)}: ` +
      `lower max_tokens, or raise the key's limit`,
  ).as('key_limit');
}

/**
 * The 402 for a balance below the estimate: how many output tokens the balance could pay for, if any.
 * A balance in debt (settlements past their holds, a debit) says so and by how much: "0 available" would
 * hide that credits must first pay it off.
 */
export function insufficientCredits(available: number, estimate: TokenEstimate, prices: TokenPrices): ApiError {
  if (available < 0)
    return new ApiError(
      'insufficient_credits',
      `insufficient credits: the balance is negative, ${formatCredits(-available)} credits in debt (${formatCredits(available)} available); ` +
        `no output tokens are affordable on this request until that is paid off; add credits`,
    );
  const inputCost = reservationFor(estimate.inputTokens, 0, prices);
  const affordable =
    prices.output === 0 ? estimate.outputTokens : Number((BigInt(available - inputCost) * 1_000_000n) / BigInt(prices.output));
  const balance = `${formatCredits(available)} credits available`;
  const least = estimate.leastOutputTokens ?? 1;
  return new ApiError(
    'insufficient_credits',
    affordable >= least
      ? `insufficient credits: ${balance}, enough for at most ${affordable} output tokens on this request (asked for ${estimate.outputTokens}); lower max_tokens or add credits`
      : affordable > 0
        ? `insufficient credits: ${balance}, enough for at most ${affordable} output tokens on this request, fewer than the ${least} its host is sent at least; add credits`
        : `insufficient credits: ${balance}, not enough for this request's input; add credits`,
  );
}

/** The reservation the log did not take: the host is not called, nothing is held or billed. */
export const reservationNotRecorded = () =>
  new ApiError('unavailable', 'the reservation could not be recorded in the event log; nothing was billed; try again');
