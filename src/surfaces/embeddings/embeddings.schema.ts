import type { EmbeddingsInputValue } from '../../embeddings/embeddings.command';
import { integerFrom, modelReference } from '../../http/schema-validation';

/**
 * POST /embeddings. Fields besides these are forwarded to the host as they are (the body passes
 * whole apart from the model).
 */
export interface EmbeddingsRequest {
  model: string;
  input: EmbeddingsInputValue;
  dimensions?: number | null;
  encoding_format?: 'float' | 'base64' | null;
  user?: string | null;
  [field: string]: unknown;
}

const tokenArray = { type: 'array', minItems: 1, items: { type: 'integer', minimum: 0 } };

export const embeddingsRequestSchema = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: modelReference,
    input: {
      'x-message':
        'must be a non-empty string, an array of non-empty strings, an array of token ids (integers ≥ 0), or an array of such arrays',
      anyOf: [
        { type: 'string', minLength: 1 },
        { type: 'array', minItems: 1, items: { type: 'string', minLength: 1 } },
        tokenArray,
        { type: 'array', minItems: 1, items: tokenArray },
      ],
    },
    dimensions: integerFrom(1),
    encoding_format: { enum: ['float', 'base64', null] },
    user: { type: ['string', 'null'] },
  },
};
