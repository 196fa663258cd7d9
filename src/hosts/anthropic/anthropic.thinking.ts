import type { CanonicalMessage, CanonicalRequest, SignedThinking } from '../../canonical/canonical';

/**
 * Whether Anthropic's extended thinking can be switched on for a request translated from another
 * format, decided over the canonical request alone: pure, shared by every kind that sends Anthropic's
 * `thinking` (the anthropic kind, Claude on Vertex AI and on Bedrock, InvokeModel and Converse).
 *
 * The API refuses thinking beside (Anthropic's "Building with extended thinking": feature
 * compatibility, thinking with tool use, preserving thinking blocks):
 * - a `tool_choice` that forces a tool (`any`, `tool`), the gateway's own forced web search included;
 * - `temperature` other than 1, any `top_k`, a `top_p` outside 0.95–1;
 * - a final assistant turn holding tool calls that does not start with the thinking blocks it was
 *   answered with. Only a messages client gives those back, block by block with their signatures
 *   (CanonicalReasoning.blocks), and the translations send them back first in the turn; other formats
 *   keep no signature of Anthropic's, so every later turn of their tool loops goes without thinking.
 * What the client asked explicitly of sampling and tools wins: its reasoning is the one not carried.
 */

/** Why thinking is left out of a call, as the reply's `x-gateway-omitted-reasoning` header names it. */
export type ThinkingConflict = 'tool_choice' | 'temperature' | 'top_k' | 'top_p' | 'tool_loop';

/** Why thinking is left out, the conflicts and `cap`: an output cap too small to think within (the API's least budget is 1,024, below the cap). */
export type ThinkingLeftOut = ThinkingConflict | 'cap';

/** The `top_p` values the API takes with thinking on. */
const THINKING_TOP_P = { min: 0.95, max: 1 };

/** Why thinking cannot go with this request, or null when it can. */
export function thinkingConflict(request: CanonicalRequest): ThinkingConflict | null {
  if (forcesTool(request)) return 'tool_choice';
  if (request.temperature !== undefined && request.temperature !== 1) return 'temperature';
  if (request.topK !== undefined) return 'top_k';
  const topP = request.topP;
  if (topP !== undefined && (topP < THINKING_TOP_P.min || topP > THINKING_TOP_P.max)) return 'top_p';
  if (toolLoopWithoutThinking(request.messages)) return 'tool_loop';
  return null;
}

/**
 * Whether the call's `tool_choice` forces a tool: the client's `required` or named tool on a call
 * with tools (the API takes none on a call without), or a web search it requires, which the
 * translation requires by name.
 */
function forcesTool(request: CanonicalRequest): boolean {
  const carried = request.carriedTools;
  if (carried?.required === 'webSearch') return true;
  const offered = request.tools.length > 0 || carried?.classes.includes('webSearch') === true;
  const choice = request.toolChoice;
  return offered && (choice === 'required' || typeof choice === 'object');
}

/**
 * The thinking blocks an assistant message goes back to Claude with, when thinking is on: those a
 * messages client gave back, signed. A message of no content and no calls is dropped with them.
 */
export function thinkingGivenBack(message: CanonicalMessage): SignedThinking[] {
  if (message.role !== 'assistant' || (message.content === '' && message.toolCalls.length === 0)) return [];
  return message.reasoning?.blocks ?? [];
}

/**
 * Whether the conversation's last assistant turn holds tool calls and does not open with the thinking
 * it was answered with, its messages merged as the translations merge them (one of no content and no
 * calls is dropped; system messages take no turn).
 */
function toolLoopWithoutThinking(messages: CanonicalMessage[]): boolean {
  let inAssistantTurn = false;
  let calls = false;
  let opensWithThinking = false;
  for (const message of messages) {
    if (message.role === 'system') continue;
    if (message.role === 'assistant') {
      if (message.content === '' && message.toolCalls.length === 0) continue;
      if (!inAssistantTurn) {
        calls = false;
        opensWithThinking = thinkingGivenBack(message).length > 0;
      }
      inAssistantTurn = true;
      if (message.toolCalls.length > 0) calls = true;
    } else if (message.role === 'tool' || message.content !== '' || (message.images?.length ?? 0) > 0) {
      inAssistantTurn = false;
    }
  }
  return calls && !opensWithThinking;
}
