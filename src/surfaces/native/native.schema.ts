import { integerFrom, nonEmptyString, numberBetween, optionalBoolean } from '../../http/schema-validation';

/** POST /models/{model}/chat: a conversation, and three knobs. */
export interface NativeChatRequest {
  messages: Array<{ role: 'user' | 'assistant'; content: string }>;
  max_tokens?: number | null;
  temperature?: number | null;
  stream?: boolean | null;
  /** Provider preferences and fallback models, as on the other surfaces (see routing/preferences.ts). */
  provider?: Record<string, unknown> | null;
  models?: string[] | null;
}

/** Stricter than the compatible surfaces: a field it does not know, anywhere, is a 400. */
export const nativeChatRequestSchema = {
  type: 'object',
  required: ['messages'],
  additionalProperties: false,
  properties: {
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role', 'content'],
        additionalProperties: false,
        properties: { role: { enum: ['user', 'assistant'] }, content: nonEmptyString },
      },
    },
    max_tokens: integerFrom(1),
    temperature: numberBetween(0, 2),
    stream: optionalBoolean,
    // Routing (OpenRouter's fields), checked field by field by routing/preferences.ts.
    provider: { type: ['object', 'null'] },
    models: { type: ['array', 'null'] },
  },
};
