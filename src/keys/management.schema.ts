/** The management API's bodies: unknown fields are refused (a misspelt setting must not pass as none). */

const rateLimits = {
  anyOf: [
    {
      type: 'object',
      properties: {
        requests_per_minute: { type: 'integer', minimum: 1 },
        tokens_per_minute: { type: 'integer', minimum: 1 },
      },
      additionalProperties: false,
      minProperties: 1,
    },
    { type: 'null' },
  ],
  'x-message': 'must be {requests_per_minute, tokens_per_minute} (either, whole numbers from 1), or null',
};
const expiresAt = {
  anyOf: [{ type: 'string', minLength: 1, maxLength: 64 }, { type: 'null' }],
  'x-message': 'must be a time in ISO 8601 (e.g. 2027-01-31T00:00:00Z), or null',
};

const limit = {
  anyOf: [{ type: 'number', exclusiveMinimum: 0 }, { type: 'null' }],
  'x-message': 'must be an amount of credits above 0, or null',
};
const limitReset = { enum: ['never', 'daily', 'weekly', 'monthly'] };

export interface KeySettingsBody {
  limit?: number | null;
  limit_reset?: 'never' | 'daily' | 'weekly' | 'monthly';
  name?: string;
  rate_limits?: { requests_per_minute?: number; tokens_per_minute?: number } | null;
  expires_at?: string | null;
  disabled?: boolean;
}

export const createKeySchema = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    rate_limits: rateLimits,
    expires_at: expiresAt,
    limit,
    limit_reset: limitReset,
  },
  additionalProperties: false,
};

export const updateKeySchema = {
  type: 'object',
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 100 },
    rate_limits: rateLimits,
    expires_at: expiresAt,
    disabled: { type: 'boolean' },
    limit,
    limit_reset: limitReset,
  },
  additionalProperties: false,
  minProperties: 1,
  'x-message': 'must change something: name, limit (with limit_reset), rate_limits, expires_at or disabled',
};
