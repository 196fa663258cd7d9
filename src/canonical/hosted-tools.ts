import type { CarriedTools, HostedToolClass, ToolsAsked, WireFormat } from './canonical';

/**
 * Hosted tools: tools a host runs itself (web search, code execution, file search…), as opposed to
 * the functions a client runs. One decision for every surface, taken once the model's hosts are
 * known: a hosted tool that every serving host runs (and prices) is carried — in the body passed
 * whole to a host of the client's format, or translated into the host's own tool where it has a
 * counterpart —; one they cannot run is left out of the call when it is only offered (the reply
 * names it, see OMITTED_TOOLS_HEADER), and the request is refused when it requires one. Pure; no I/O.
 */

/**
 * The tool types (as the Responses and messages formats name them) that a host runs itself. Other
 * types that are not functions (`custom`, `computer_use_preview`, `bash_20250124`…) are the
 * client's to run: never left out, refused by the surface when it has no translation for them.
 */
const HOSTED =
  /^(?:web_search|web_fetch|file_search|code_interpreter|code_execution|image_generation|mcp|tool_search)(?:_[a-z0-9]+)*$/;

/**
 * What a tool's type may be, in every format: lowercase letters, digits and underscores, as every
 * real one is (`web_search_preview_2025_03_11`, `bash_20250124`). The surfaces' schemas refuse any
 * other (400, before anything is held or called): a hosted tool's type is named in a reply header
 * (OMITTED_TOOLS_HEADER) and a header cannot carry what a client may put in a string.
 */
export const TOOL_TYPE_PATTERN = '^[a-z0-9_]{1,64}$';
const TOOL_TYPE = new RegExp(TOOL_TYPE_PATTERN);

/** A tool type a host runs itself: whole (anchored), of the tool type's shape. */
export const isHostedTool = (type: string): boolean => TOOL_TYPE.test(type) && HOSTED.test(type);

/** The schema of a tool's `type` in a request body (see TOOL_TYPE_PATTERN). */
export const toolTypeSchema = {
  type: 'string',
  pattern: TOOL_TYPE_PATTERN,
  'x-message': 'must be a tool type: 1 to 64 lowercase letters, digits and underscores',
} as const;

/**
 * The Gemini format's own hosted tools, by their key in a tool entry, and the class each is: Google
 * Search grounding (and its older retrieval form) is web search, URL context a fetch.
 */
const GEMINI_TOOL_CLASSES: Readonly<Record<string, HostedToolClass>> = {
  googleSearch: 'webSearch',
  googleSearchRetrieval: 'webSearch',
  urlContext: 'webFetch',
  codeExecution: 'codeExecution',
  fileSearch: 'fileSearch',
};

/**
 * The class a hosted tool's uses are billed in, by its type in any format (`web_search`,
 * `web_search_preview`, `web_search_20250305`, Gemini's `googleSearch`…); null for those with no
 * per-use class (`mcp`, `tool_search`), which no host is asked to run.
 */
export function hostedToolClassOf(type: string): HostedToolClass | null {
  if (Object.hasOwn(GEMINI_TOOL_CLASSES, type)) return GEMINI_TOOL_CLASSES[type];
  if (!isHostedTool(type)) return null;
  if (type.startsWith('web_search')) return 'webSearch';
  if (type.startsWith('web_fetch')) return 'webFetch';
  if (type.startsWith('code_execution') || type.startsWith('code_interpreter')) return 'codeExecution';
  if (type.startsWith('file_search')) return 'fileSearch';
  if (type.startsWith('image_generation')) return 'imageGeneration';
  return null;
}

/**
 * The Responses format's items that are a hosted tool's calls, by the class each use is billed in: an
 * `openai-responses` host counts them among its reply's output items; a Responses client sends them
 * back in a later turn's `input` (OpenAI takes them there), kept in the body a host of that format is
 * sent whole, with no counterpart in a translation for another.
 */
const RESPONSES_HOSTED_TOOL_ITEMS: Readonly<Record<string, HostedToolClass>> = {
  web_search_call: 'webSearch',
  file_search_call: 'fileSearch',
  code_interpreter_call: 'codeExecution',
  image_generation_call: 'imageGeneration',
};

/** The class of a Responses item that is a hosted tool's call (`web_search_call`…); null for any other item. */
export const hostedToolItemClassOf = (type: string): HostedToolClass | null =>
  Object.hasOwn(RESPONSES_HOSTED_TOOL_ITEMS, type) ? RESPONSES_HOSTED_TOOL_ITEMS[type] : null;

/** The Responses items that are hosted tools' calls, as a message names them. */
export const RESPONSES_HOSTED_TOOL_ITEM_TYPES: readonly string[] = Object.keys(RESPONSES_HOSTED_TOOL_ITEMS);

/**
 * What a kind of host runs of the hosted tools, by class (declared on its HostKind): `whole`, those
 * it runs in the body of a client of the format it takes whole (HostKind.wholeFormat); `translated`, those it
 * runs when a client of another format offers them (it adds its own tool for the request's
 * `carriedTools`). A kind that runs none declares nothing.
 */
export interface HostedToolsRun {
  whole: ReadonlySet<HostedToolClass>;
  translated: ReadonlySet<HostedToolClass>;
  /**
   * Kinds some of whose models cannot run a hosted tool in a call that also offers the client's
   * functions (Gemini 2.5 refuses Google Search beside function declarations): whether the
   * host's model can. Absent: every model can.
   */
  besideFunctions?: (hostModel: string) => boolean;
}

/** One host that may serve a request, as the decision sees it: what its kind runs, what its catalogue entry prices per use, its model. */
export interface ServingHost {
  runs: HostedToolsRun | undefined;
  /** The format whose clients' bodies it is sent whole (HostKind.wholeFormat), or null. */
  whole: WireFormat | null;
  priced: ReadonlySet<HostedToolClass>;
  /** The model's name at the host. */
  model: string;
}

/**
 * Whether a host runs a hosted tool offered in `format`: its kind runs the tool's class (whole in
 * its own format, else translated; beside the client's functions when `withFunctions`, where its model can)
 * and its catalogue entry prices it — a use is never run unbilled.
 */
export function hostRuns(host: ServingHost, type: string, format: WireFormat | undefined, withFunctions = false): boolean {
  const toolClass = hostedToolClassOf(type);
  const runs = host.runs;
  if (toolClass === null || runs === undefined || !host.priced.has(toolClass)) return false;
  if (withFunctions && runs.besideFunctions?.(host.model) === false) return false;
  return format !== undefined && format === host.whole ? runs.whole.has(toolClass) : runs.translated.has(toolClass);
}

/**
 * The hosted tools offered that every serving host runs (a fallback must run them too), by type;
 * `withFunctions`: the client offers functions too.
 */
export const runnableTools = (
  offered: string[],
  format: WireFormat | undefined,
  hosts: ServingHost[],
  withFunctions = false,
): Set<string> =>
  new Set(offered.filter((type) => hosts.length > 0 && hosts.every((host) => hostRuns(host, type, format, withFunctions))));

/** The reply header naming the hosted tools left out of the call (`web_search, image_generation`). */
export const OMITTED_TOOLS_HEADER = 'x-gateway-omitted-tools';

export type HostedToolsDecision =
  | { refused: string }
  /** The hosted tools to leave out of the call (each type once), and those carried. */
  | { omitted: string[]; carried: string[] };

const named = (types: string[]) => types.map((t) => `"${t}"`).join(', ');

/**
 * Given the tools asked for, the types every serving host runs (`runnable`) and, for a refusal, what
 * to say of where they run (`elsewhere`: "models that run it: …"): what is carried, left out or refused.
 */
export function decideHostedTools(
  asked: ToolsAsked,
  runnable: ReadonlySet<string>,
  elsewhere: (types: string[]) => string = () => 'no model of this gateway runs it',
): HostedToolsDecision {
  const offered = [...new Set(asked.hosted)];
  const omitted = offered.filter((type) => !runnable.has(type));
  const carried = offered.filter((type) => runnable.has(type));
  const { required } = asked;
  if (required !== null && required !== 'any' && !runnable.has(required.hosted))
    return {
      refused: `tool_choice requires the hosted tool ${named([required.hosted])}, which the hosts of this model do not run (${elsewhere([required.hosted])}): offered without being required, it is left out of the call`,
    };
  if (required === 'any' && !asked.clientTools && carried.length === 0 && omitted.length > 0)
    return {
      refused: `tool_choice requires a tool, and the only tools offered are hosted ones (${named(omitted)}), which the hosts of this model do not run (${elsewhere(omitted)})`,
    };
  return { omitted, carried };
}

/**
 * The hosted tools carried, by class, for a host translating the request, with the most uses of
 * each it may make (`maxUses`, which the reservation holds for); `required`: the class the
 * client's tool_choice names. Null when nothing is carried.
 */
export function carriedToolsOf(asked: ToolsAsked, carried: string[], maxUses: number): CarriedTools | null {
  const classes = [...new Set(carried.map(hostedToolClassOf).filter((c): c is HostedToolClass => c !== null))];
  if (classes.length === 0) return null;
  const required = asked.required !== null && asked.required !== 'any' ? hostedToolClassOf(asked.required.hosted) : null;
  return { classes, maxUses, ...(required !== null ? { required } : {}) };
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A client's body as a host of its format is sent it whole: without the hosted tools left out (they
 * are announced as left out, so no host may run them unbilled), nor a tool_choice once no tool is
 * left. Chat completions offer web search by a field of their own (`web_search_options`).
 */
export function withoutHostedTools(
  format: WireFormat,
  body: Record<string, unknown>,
  omitted: string[],
): Record<string, unknown> {
  if (omitted.length === 0) return body;
  if (format === 'chat-completions') {
    const kept = { ...body };
    if (omitted.includes('web_search')) delete kept.web_search_options;
    return kept;
  }
  const tools = Array.isArray(body.tools) ? (body.tools as unknown[]) : [];
  const kept: Record<string, unknown> = {
    ...body,
    tools: tools.filter((t) => !(isObject(t) && typeof t.type === 'string' && omitted.includes(t.type))),
  };
  if ((kept.tools as unknown[]).length === 0) {
    // Hosts refuse a tool_choice without tools.
    delete kept.tools;
    delete kept.tool_choice;
  }
  return kept;
}
