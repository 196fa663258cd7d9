/**
 * Request fields that make a host charge other than its list price for the model. The catalogue
 * prices each model's standard mode only, and a host of the client's own format gets the body whole:
 * carried, these would be billed at the standard price while the host charges more (OpenAI's
 * priority, fast and ultrafast tiers, Anthropic's fast mode and US-only inference) or less (flex). So
 * a request asking for another mode is refused naming the field; asking for the standard one is fine.
 */

/** OpenAI's `service_tier` (chat completions and Responses): `auto` runs as the account is set up, `default` at list price. */
export const standardServiceTier = {
  enum: [null, 'auto', 'default'],
  'x-message':
    'must be "auto" or "default": the gateway bills at the standard list price, and the other tiers (flex, priority, fast, scale…) are priced apart by the host',
};

/** Anthropic's `speed`: `fast` is priced at a multiple of the standard rates. */
export const standardSpeed = {
  enum: [null, 'standard'],
  'x-message': 'must be "standard": fast mode is priced at a multiple of the standard rates, which the gateway does not bill',
};

/** Anthropic's `inference_geo`: US-only inference is priced above the global rates. */
export const globalInferenceGeo = {
  enum: [null, 'global'],
  'x-message':
    'must be "global": inference pinned to one geography is priced above the standard rates, which the gateway does not bill',
};
