import { integerFrom, nonEmptyString, numberBetween, optionalBoolean } from '../../http/schema-validation';

/** POST /models/{model}/chat: a conversation, and three knobs. */
export interface NativeChatRequest {
  messages: Array<{ role: 'user' | 'assistant'; content: string }>;
  max_tokens?: number | null;
  temperature?: number | null;
  stream?: boolean | null;
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
  },
};
