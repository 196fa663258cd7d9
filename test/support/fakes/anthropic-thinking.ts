// What Anthropic's API refuses beside extended thinking, in its own words (a 400 invalid_request_error):
// the rules of "Building with extended thinking" (feature compatibility, thinking with tool use,
// preserving thinking blocks), for the fake's Messages wire (Anthropic's API, Claude on Vertex AI,
// Bedrock's InvokeModel) and for Claude behind Bedrock's Converse (its fields moved to Converse's places).

const DOCS = 'https://docs.claude.com/en/docs/build-with-claude/extended-thinking';
const CONSIDERATIONS = `Please consult our documentation at ${DOCS}#important-considerations-when-using-extended-thinking`;

/** A thinking block's signature (opaque base64 on the real API): one per thinking text, so tests can expect it. */
export const signatureOf = (thinking: string) => Buffer.from(`signed:${thinking}`).toString('base64');

/** A request's fields the rules read, wherever its wire puts them. */
interface ThinkingView {
  thinking: unknown;
  temperature: unknown;
  topP: unknown;
  topK: unknown;
  /** `tool_choice.type` (Converse's `any` / `tool` named the same). */
  toolChoice: unknown;
  /** The last assistant message: its index and its blocks' types, in the Messages API's names. */
  lastAssistant: { index: number; blocks: string[] } | null;
  /** Where the first thinking block given back whose signature is not its own sits (`messages.1.content.0`), or null. */
  forged: string | null;
}

/** The API's message for a request it refuses beside thinking, or null (the rules apply with thinking on). */
function refusal(view: ThinkingView): string | null {
  // Every thinking block given back is checked against its signature, thinking on or not.
  if (view.forged !== null) return `${view.forged}: Invalid \`signature\` in \`thinking\` block`;
  const type = (view.thinking as { type?: unknown } | undefined)?.type;
  if (type !== 'enabled' && type !== 'adaptive') return null;
  if (view.toolChoice === 'any' || view.toolChoice === 'tool')
    return 'Thinking may not be enabled when tool_choice forces tool use.';
  if (view.temperature !== undefined && view.temperature !== 1)
    return `\`temperature\` may only be set to 1 when thinking is enabled. ${CONSIDERATIONS}`;
  if (view.topK !== undefined) return `\`top_k\` must be unset when thinking is enabled. ${CONSIDERATIONS}`;
  if (view.topP !== undefined && (typeof view.topP !== 'number' || view.topP < 0.95 || view.topP > 1))
    return `\`top_p\` must be greater than or equal to 0.95 or unset when thinking is enabled. ${CONSIDERATIONS}`;
  // The turn answering the tool results in flight must start with the thinking it was given with. Not
  // with adaptive thinking, where the model may not think at all (Claude Code sends such turns back as they came).
  const last = view.lastAssistant;
  if (
    type === 'enabled' &&
    last &&
    last.blocks.includes('tool_use') &&
    last.blocks[0] !== 'thinking' &&
    last.blocks[0] !== 'redacted_thinking'
  )
    return (
      `messages.${last.index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${last.blocks[0]}\`. ` +
      'When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost ' +
      'set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid ' +
      `this requirement, disable \`thinking\`. Please consult our documentation at ${DOCS}`
    );
  return null;
}

/** The last assistant message of a list, its blocks' types named by `typeOf`. */
function lastAssistantOf(messages: unknown, typeOf: (block: any) => string): ThinkingView['lastAssistant'] {
  if (!Array.isArray(messages)) return null;
  for (let index = messages.length - 1; index >= 0; index--) {
    const message = messages[index];
    if (message?.role !== 'assistant') continue;
    const content: unknown = message.content;
    return { index, blocks: Array.isArray(content) ? content.map(typeOf) : ['text'] };
  }
  return null;
}

/**
 * The first thinking block of `messages` (`signed` reads a block's text and signature, or null for
 * another block) that was not signed as the fake signs: where it sits, or null.
 */
function forgedAt(messages: unknown, signed: (block: any) => { text: unknown; signature: unknown } | null): string | null {
  if (!Array.isArray(messages)) return null;
  for (const [index, message] of messages.entries()) {
    if (message?.role !== 'assistant' || !Array.isArray(message.content)) continue;
    for (const [at, block] of message.content.entries()) {
      const thinking = signed(block);
      if (thinking && (typeof thinking.text !== 'string' || thinking.signature !== signatureOf(thinking.text)))
        return `messages.${index}.content.${at}`;
    }
  }
  return null;
}

/** What the Messages API refuses in a body beside thinking, or null. */
export function messagesThinkingProblem(body: any): string | null {
  return refusal({
    thinking: body.thinking,
    temperature: body.temperature,
    topP: body.top_p,
    topK: body.top_k,
    toolChoice: body.tool_choice?.type,
    lastAssistant: lastAssistantOf(body.messages, (block) => String(block?.type)),
    forged: forgedAt(body.messages, (block) =>
      block?.type === 'thinking' ? { text: block.thinking, signature: block.signature } : null,
    ),
  });
}

/**
 * Claude's 4.5 models (and Opus 4.1) refuse `temperature` and `top_p` together, thinking or not
 * (Anthropic's migration notes for Claude 4.5; the API's own words as users report them).
 */
const ONE_SAMPLER_ONLY = /claude-(?:sonnet-4-5|haiku-4-5|opus-4-5|opus-4-1)/;

/** What such a model refuses of its sampling parameters, or null. */
export function samplingProblem(model: unknown, temperature: unknown, topP: unknown): string | null {
  if (typeof model !== 'string' || !ONE_SAMPLER_ONLY.test(model) || temperature === undefined || topP === undefined) return null;
  return '`temperature` and `top_p` cannot both be specified for this model. Please use only one.';
}

/** Converse's blocks in the Messages API's names. */
const converseBlockType = (block: any): string =>
  block?.toolUse
    ? 'tool_use'
    : block?.reasoningContent?.redactedContent
      ? 'redacted_thinking'
      : block?.reasoningContent
        ? 'thinking'
        : block?.text !== undefined
          ? 'text'
          : block?.image
            ? 'image'
            : 'tool_result';

/** What Claude refuses in a Converse body beside thinking (`additionalModelRequestFields.thinking`), or null. */
export function converseThinkingProblem(body: any): string | null {
  const extra = body.additionalModelRequestFields ?? {};
  const choice = body.toolConfig?.toolChoice;
  return refusal({
    thinking: extra.thinking,
    temperature: body.inferenceConfig?.temperature,
    topP: body.inferenceConfig?.topP,
    topK: extra.top_k,
    toolChoice: choice?.any ? 'any' : choice?.tool ? 'tool' : undefined,
    lastAssistant: lastAssistantOf(body.messages, converseBlockType),
    forged: forgedAt(body.messages, (block) => {
      const reasoning = block?.reasoningContent?.reasoningText;
      return reasoning ? { text: reasoning.text, signature: reasoning.signature } : null;
    }),
  });
}
