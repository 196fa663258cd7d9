/**
 * Hosted tools: tools a host runs itself (web search, code execution, file search…), as opposed to
 * the functions a client runs. One decision for every surface: a hosted tool no serving host can
 * run is left out of the call when it is only offered (the reply names it, see
 * OMITTED_TOOLS_HEADER), and the request is refused when it requires one. Pure; no I/O.
 */

/**
 * The tool types (as the Responses and messages formats name them) that a host runs itself. Other
 * types that are not functions (`custom`, `computer_use_preview`, `bash_20250124`…) are the
 * client's to run: never left out, refused by the surface when it has no translation for them.
 */
export const HOSTED_TOOL_TYPE =
  '^(web_search|web_fetch|file_search|code_interpreter|code_execution|image_generation|mcp|tool_search)';

const HOSTED = new RegExp(HOSTED_TOOL_TYPE);

export const isHostedTool = (type: string): boolean => HOSTED.test(type);

/**
 * The hosted tools a serving host can run, by type. No host kind runs one yet (chat-completions and
 * messages hosts are called without them), so the set is empty for every model; a kind that runs
 * them will say which here.
 */
export const HOSTED_TOOLS_RUN: ReadonlySet<string> = new Set();

/** The reply header naming the hosted tools left out of the call (`web_search, image_generation`). */
export const OMITTED_TOOLS_HEADER = 'x-gateway-omitted-tools';

/** A request's tools, as a surface classifies them. */
export interface ToolsAsked {
  /** The hosted tools offered, by type (in the client's order; repeats allowed). */
  hosted: string[];
  /** Whether the client offers tools of its own (functions) too. */
  clientTools: boolean;
  /** What the tool choice requires: one hosted tool (by type), some tool (any), or nothing. */
  required: { hosted: string } | 'any' | null;
}

export type HostedToolsDecision =
  | { refused: string }
  /** The hosted tools to leave out of the call (each type once), and those carried. */
  | { omitted: string[]; carried: string[] };

const named = (types: string[]) => types.map((t) => `"${t}"`).join(', ');

const NO_MODEL_RUNS = 'which no model of this gateway can run yet (its hosts run no tools of their own)';

export function decideHostedTools(asked: ToolsAsked, runnable: ReadonlySet<string> = HOSTED_TOOLS_RUN): HostedToolsDecision {
  const offered = [...new Set(asked.hosted)];
  const omitted = offered.filter((type) => !runnable.has(type));
  const carried = offered.filter((type) => runnable.has(type));
  const { required } = asked;
  if (required !== null && required !== 'any' && !runnable.has(required.hosted))
    return {
      refused: `tool_choice requires the hosted tool ${named([required.hosted])}, ${NO_MODEL_RUNS}: offered without being required, it is left out of the call`,
    };
  if (required === 'any' && !asked.clientTools && carried.length === 0 && omitted.length > 0)
    return {
      refused: `tool_choice requires a tool, and the only tools offered are hosted ones (${named(omitted)}), ${NO_MODEL_RUNS}`,
    };
  return { omitted, carried };
}
