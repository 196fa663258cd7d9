/** The bench's request bodies: a one-line prompt, or (BENCH_PROMPT=agent) what a coding agent sends on each turn. */
export const CHAT_MESSAGES = [{ role: 'user', content: 'Hello there, how are you?' }];
export const json = (body: object) => JSON.stringify(body);

/**
 * BENCH_PROMPT=agent: every request carries what a coding agent sends on each turn, in its surface's
 * own format: about 8 KB of instructions and 24 tools with JSON Schemas (a 34 KB chat completion).
 * Otherwise a one-line prompt, which measures the gateway's cost per request rather than per byte.
 */
export const AGENT = process.env.BENCH_PROMPT === 'agent';
export const AGENT_INSTRUCTIONS = 'You are a coding agent working in a repository. '.repeat(170);
export const AGENT_TOOLS = Array.from({ length: 24 }, (_, i) => ({
  name: `tool_${i}`,
  description: `Does thing number ${i}. ${'Use it carefully when the user asks for it, and only then. '.repeat(6)}`,
  schema: {
    type: 'object',
    properties: Object.fromEntries(
      Array.from({ length: 6 }, (_, j) => [
        `arg${j}`,
        { type: 'string', description: `Argument ${j} of the tool, as a path or a pattern.` },
      ]),
    ),
    required: ['arg0'],
  },
}));
export const AGENT_ASK = 'Please fix the failing test in src/app.ts.';

/** A chat completion's bodies; `cacheKey`: a `prompt_cache_key`, which sticky routing follows. */
export const chat = (model: string, maxTokens: number, cacheKey?: string) => {
  const key = cacheKey === undefined ? {} : { prompt_cache_key: cacheKey };
  const prompt = AGENT
    ? {
        messages: [
          { role: 'system', content: AGENT_INSTRUCTIONS },
          { role: 'user', content: AGENT_ASK },
        ],
        tools: AGENT_TOOLS.map((t) => ({
          type: 'function',
          function: { name: t.name, description: t.description, parameters: t.schema },
        })),
      }
    : { messages: CHAT_MESSAGES };
  return {
    plain: json({ model, ...prompt, max_tokens: maxTokens, ...key }),
    streamed: json({ model, ...prompt, max_tokens: maxTokens, stream: true, ...key }),
  };
};
