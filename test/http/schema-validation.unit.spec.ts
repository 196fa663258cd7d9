import { ApiError } from '../../src/http/api-error';
import { integerFrom, nonEmptyString, schemaValidation } from '../../src/http/schema-validation';

// What a refused body is told: the field at fault in the message and in `param`, in plain words.
const body = schemaValidation<unknown>({
  type: 'object',
  required: ['model', 'messages'],
  additionalProperties: false,
  properties: {
    model: { type: 'string', minLength: 1, maxLength: 8 },
    messages: {
      type: 'array',
      minItems: 1,
      maxItems: 2,
      items: { type: 'object', required: ['role'], properties: { role: nonEmptyString } },
    },
    n: integerFrom(1),
    tags: { type: 'array', minItems: 2 },
  },
});

const refusal = (value: unknown) => {
  try {
    body.transform(value, { type: 'body' });
  } catch (error) {
    const { message, details } = error as ApiError;
    return { message, param: details.param };
  }
  throw new Error('accepted');
};

const hi = [{ role: 'user' }];

it.each([
  [{ model: '', messages: hi }, 'model must not be empty', 'model'],
  [{ model: 'x'.repeat(9), messages: hi }, 'model must be at most 8 characters long', 'model'],
  [{ model: 'm', messages: [] }, 'messages must hold at least 1 item', 'messages'],
  [{ model: 'm', messages: [...hi, ...hi, ...hi] }, 'messages must hold at most 2 items', 'messages'],
  [{ model: 'm', messages: hi, tags: ['a'] }, 'tags must hold at least 2 items', 'tags'],
  [{ model: 'm', messages: [{ role: '' }] }, 'messages.0.role must not be empty', 'messages[0].role'],
  [{ model: 'm' }, 'messages is required', 'messages'],
  [{ model: 'm', messages: hi, budget: 5 }, 'budget is not allowed', 'budget'],
  [{ model: 'm', messages: hi, n: 0 }, 'n must be >= 1', 'n'],
])('%j: %s', (value, message, param) => {
  expect(refusal(value)).toEqual({ message, param });
});
