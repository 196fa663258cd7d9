/**
 * The id a translated reply carries, made from its request's id (`req_…` loses its prefix) under
 * its surface's prefix, and the way back: `GET /generation` finds a request by the id its client
 * saw in the reply, as OpenRouter's does.
 */
const PREFIXES = ['chatcmpl-', 'msg_', 'resp_', 'gen-'] as const;
export type ReplyIdPrefix = (typeof PREFIXES)[number];

export const replyIdOf = (prefix: ReplyIdPrefix, requestId: string): string => `${prefix}${requestId.replace(/^req_/, '')}`;

/** The request ids a reply's id may have been made from (none when it has no surface's prefix). */
export function requestIdsOf(replyId: string): string[] {
  const prefix = PREFIXES.find((p) => replyId.startsWith(p) && replyId.length > p.length);
  if (!prefix) return [];
  const rest = replyId.slice(prefix.length);
  return [`req_${rest}`, rest];
}
