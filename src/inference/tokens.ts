import type { CanonicalRequest } from '../canonical/canonical';

/**
 * Token counts without a tokenizer: used to size a reservation before the call, and to bill
 * what was delivered when a host reports no usage. About four characters a token for English;
 * the reservation adds a little per message for the wire format's framing.
 */
export const CHARS_PER_TOKEN = 4;
const PER_MESSAGE = 4;

/**
 * The most characters one token of a reply is believed to hold on average: four times the usual
 * ratio, room for very compressible text (runs of spaces or symbols that tokenizers merge). A host
 * counting fewer tokens than this allows for what it delivered is not believed (5 MB of text is
 * not 5 tokens): see usage-check.ts.
 */
export const MAX_CHARS_PER_TOKEN = 4 * CHARS_PER_TOKEN;

/** Tokens in this many characters of text, rounded up. */
export const tokensForChars = (chars: number): number => Math.ceil(chars / CHARS_PER_TOKEN);

export function estimateInputTokens(request: CanonicalRequest): number {
  let chars = request.system.reduce((n, s) => n + s.length, 0);
  for (const m of request.messages) {
    chars += m.content.length;
    if (m.role === 'assistant') for (const c of m.toolCalls) chars += c.name.length + c.arguments.length;
  }
  for (const t of request.tools) chars += t.name.length + (t.description?.length ?? 0) + JSON.stringify(t.parameters).length;
  return tokensForChars(chars) + PER_MESSAGE * (request.messages.length + request.system.length) + 3;
}
