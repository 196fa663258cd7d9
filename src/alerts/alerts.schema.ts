/** The body of PUT /api/v1/alerts (and the dashboard's): every setting at once; unknown fields are refused. */
export interface AlertsBody {
  url: string;
  balance_below?: number | string | null;
  day_spend_above?: number | string | null;
  key_limits?: boolean;
}

const amount = {
  anyOf: [{ type: 'number' }, { type: 'string', maxLength: 40 }, { type: 'null' }],
  'x-message': 'must be an amount of credits above 0, or null',
};

export const alertsSchema = {
  type: 'object',
  required: ['url'],
  properties: {
    url: { type: 'string', minLength: 1, maxLength: 2048 },
    balance_below: amount,
    day_spend_above: amount,
    key_limits: { type: 'boolean' },
  },
  additionalProperties: false,
};
