import { HOSTED_TOOL_CLASSES, type CanonicalRequest, type Usage } from '../canonical/canonical';
import type { TokenClass } from '../ledger/ledger.events';
import type { HostedToolCounts, TokenUsage } from '../ledger/money';
import { CHARS_PER_TOKEN, MAX_CHARS_PER_TOKEN, tokensForChars } from './tokens';

/**
 * An upstream's usage, checked before it is billed. A host is a third party (a self-hosted server,
 * a buggy or hostile compatible one): its counts are believed only when they are whole numbers
 * ≥ 0 that the request makes possible. What fails is replaced by the gateway's own count of what
 * was sent and delivered, and the settlement says why (its flag). Pure, and run once per request:
 * the stream itself only keeps the host's last count.
 */

/** What the request allows, known once it is admitted. */
export interface UsageLimits {
  /** The input estimated from what was sent (billed when the host's input count is not believed). */
  estimatedInput: number;
  /** The most input tokens (every class together): the model's context length plus the characters sent. */
  maxInput: number;
  /** The most output tokens: the cap the host was given (the pipeline always gives one). */
  maxOutput: number;
  /** The most uses of each hosted tool carried (what the reservation held for); a class not carried (or none given) allows none. */
  maxHostedToolUses?: HostedToolCounts;
}

/**
 * The limits of an admitted request. The characters sent are bounded by four times the estimate
 * (which is a quarter of them, rounded up, plus framing), and a token is at least a character
 * of text, so no honest count of the input exceeds the context length plus them (images, tool
 * definitions and the host's own framing fit in the context length, or the host refuses).
 */
export function usageLimits(contextLength: number, estimatedInput: number, request: CanonicalRequest): UsageLimits {
  // One choice: `n` is not sent to any host (the chat-completions surface drops it).
  const carried = request.carriedTools;
  return {
    estimatedInput,
    maxInput: contextLength + CHARS_PER_TOKEN * estimatedInput,
    maxOutput: request.maxTokens ?? 0,
    ...(carried ? { maxHostedToolUses: Object.fromEntries(carried.classes.map((c) => [c, carried.maxUses])) } : {}),
  };
}

/**
 * What to bill of a request's usage: the tokens, why some are the gateway's own count for a count
 * that failed the checks (null: none failed), and which classes are the gateway's own count (the
 * charge's provenance: [] when every class is the host's; a request cut short may bill the
 * gateway's count with no flag, a host counting at its end).
 */
export interface CheckedUsage {
  usage: TokenUsage;
  flag: string | null;
  estimated: TokenClass[];
}

const INPUT_ESTIMATED: TokenClass[] = ['input', 'cacheRead', 'cacheWrite', 'cacheWrite1h'];
const ALL_ESTIMATED: TokenClass[] = [...INPUT_ESTIMATED, 'output'];

const isCount = (n: number): boolean => Number.isSafeInteger(n) && n >= 0;

/** A count as a message shows it: a non-number (a string, an object) reached the check as NaN. */
const shown = (n: number): string => (Number.isNaN(n) ? 'not a number' : String(n));

const INPUT_CLASSES = ['inputTokens', 'cacheReadTokens', 'cacheWriteTokens', 'cacheWrite1hTokens'] as const;

/** Why the host's input classes are not believed, or null. */
function inputProblem(usage: Usage, limits: UsageLimits): string | null {
  let total = 0;
  for (const field of INPUT_CLASSES) {
    const n = usage[field];
    if (!isCount(n)) return `${field} ${shown(n)} is not a whole number ≥ 0`;
    total += n;
  }
  if (total > limits.maxInput) return `${total} input tokens exceed the context length plus what was sent (${limits.maxInput})`;
  return null;
}

/** Why the host's output count is not believed, or null; `floor`: the fewest the delivered characters allow. */
function outputProblem(n: number, limits: UsageLimits, floor: number): string | null {
  if (!isCount(n)) return `outputTokens ${shown(n)} is not a whole number ≥ 0`;
  if (n > limits.maxOutput) return `${n} output tokens exceed the cap (${limits.maxOutput})`;
  if (n < floor) return `${n} output tokens are too few for what was delivered (at least ${floor})`;
  return null;
}

/**
 * The hosted-tool uses to bill, and why some are not as the host counted them: a count that is not
 * a whole number ≥ 0 is billed as none; one above what the request allowed (a class it did not
 * carry allows none) is billed at that bound. The gateway cannot count a host's searches itself.
 */
function checkedToolUses(
  reported: Usage['hostedToolUses'],
  limits: UsageLimits,
): { uses?: HostedToolCounts; problems: string[] } {
  if (reported === undefined) return { problems: [] };
  const uses: HostedToolCounts = {};
  const problems: string[] = [];
  for (const toolClass of HOSTED_TOOL_CLASSES) {
    const n = reported[toolClass];
    if (n === undefined) continue;
    const most = limits.maxHostedToolUses?.[toolClass] ?? 0;
    if (!isCount(n)) problems.push(`${toolClass} uses ${shown(n)} is not a whole number ≥ 0`);
    else if (n > most)
      problems.push(
        most === 0
          ? `${n} ${toolClass} uses of a tool the request did not carry`
          : `${n} ${toolClass} uses exceed the bound (${most})`,
      );
    const billed = isCount(n) ? Math.min(n, most) : 0;
    if (billed > 0) uses[toolClass] = billed;
  }
  return { ...(Object.keys(uses).length > 0 ? { uses } : {}), problems };
}

/** Usage with its hosted-tool uses as checked (none: the field left out). */
function withUses(usage: TokenUsage, uses: HostedToolCounts | undefined): TokenUsage {
  const { hostedToolUses: _reported, ...tokens } = usage;
  return uses === undefined ? tokens : { ...tokens, hostedToolUses: uses };
}

/**
 * The usage to bill, given the host's last count (null: it reported none), the characters of
 * text, reasoning and tool calls delivered, and whether the reply completed.
 *
 * - The gateway's own count: the input estimate (as uncached input) and the delivered characters
 *   at four a token, never more than the cap (a host cannot have produced more).
 * - A completed reply is billed as the host counted it when its counts pass: every class a whole
 *   number ≥ 0, the input (all classes) at most the context length plus what was sent, the output at most the cap and at least one token per 16 characters
 *   delivered. The input classes, and the output, are replaced by the gateway's count where they
 *   fail, and flagged; so is a completed reply with no usage at all.
 * - A request cut short (the client left, the host failed or timed out) is billed its input as the
 *   host counted it (else the estimate) and at least the output delivered: a host counts the output
 *   at its end. Only counts that fail the checks are flagged: missing ones are expected.
 */
export function checkedUsage(
  reported: Usage | null,
  deliveredChars: number,
  limits: UsageLimits,
  complete: boolean,
): CheckedUsage {
  const counted = Math.min(limits.maxOutput, tokensForChars(deliveredChars));
  if (reported === null) {
    return {
      usage: estimatedUsage(limits.estimatedInput, counted),
      flag: complete ? 'the host reported no usage' : null,
      estimated: ALL_ESTIMATED,
    };
  }
  const floor = complete ? Math.min(limits.maxOutput, Math.ceil(deliveredChars / MAX_CHARS_PER_TOKEN)) : 0;
  const input = inputProblem(reported, limits);
  const output = outputProblem(reported.outputTokens, limits, floor);
  const tools = checkedToolUses(reported.hostedToolUses, limits);
  const problems = [input, output, ...tools.problems].filter((problem) => problem !== null);
  const flag = problems.length === 0 ? null : problems.join('; ');
  if (input === null && output === null) {
    const outputTokens = complete ? reported.outputTokens : Math.max(reported.outputTokens, counted);
    const estimated: TokenClass[] = outputTokens === reported.outputTokens ? [] : ['output'];
    if (flag === null && estimated.length === 0) return { usage: reported, flag, estimated };
    return { usage: withUses({ ...reported, outputTokens }, tools.uses), flag, estimated };
  }
  const outputTokens = output === null ? Math.max(reported.outputTokens, complete ? 0 : counted) : counted;
  const usage = input === null ? { ...reported, outputTokens } : estimatedUsage(limits.estimatedInput, outputTokens);
  const estimated = [
    ...(input === null ? [] : INPUT_ESTIMATED),
    ...(output === null && outputTokens === reported.outputTokens ? [] : (['output'] as const)),
  ];
  return { usage: withUses(usage, tools.uses), flag, estimated };
}

const estimatedUsage = (inputTokens: number, outputTokens: number): TokenUsage => ({
  inputTokens,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  cacheWrite1hTokens: 0,
  outputTokens,
});
