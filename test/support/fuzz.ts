import fc from 'fast-check';

/** A JSON text nesting arrays or objects `depth` levels deep (one value, no commas). */
export function nested(depth: number, kind: 'array' | 'object' = 'array'): string {
  return kind === 'array' ? `${'['.repeat(depth)}1${']'.repeat(depth)}` : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

/** Any value at all, in a field: the wrong types, nulls, deep nesting, strings of every kind. */
const anyValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: fc.anything({ maxDepth: 3 }) },
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 300 }) },
  { weight: 1, arbitrary: fc.constantFrom(null, true, 0, -1, 1e308, '', [], {}, [null], [[]], { toString: 1 }) },
);

/** A raw JSON value nested past any bound (or just within), as text. */
const deepText = fc
  .tuple(fc.integer({ min: 100, max: 20_000 }), fc.constantFrom<'array' | 'object'>('array', 'object'))
  .map(([depth, kind]) => nested(depth, kind));

/**
 * Request bodies for a route whose fields are `fields` (each with what a good value looks like):
 * mostly objects with those fields, good or not, some missing, some extra; also any JSON value,
 * bodies nested thousands of levels deep, text that is not JSON, and JSON cut short.
 */
export function bodiesFor(fields: Record<string, fc.Arbitrary<unknown>>): fc.Arbitrary<string> {
  const fieldValues = Object.fromEntries(
    Object.entries(fields).map(([name, good]) => [
      name,
      fc.oneof({ weight: 2, arbitrary: good }, { weight: 3, arbitrary: anyValue }),
    ]),
  );
  const objects = fc
    .tuple(fc.record(fieldValues, { requiredKeys: [] }), fc.dictionary(fc.string({ maxLength: 12 }), anyValue, { maxKeys: 3 }))
    .map(([known, extra]) => JSON.stringify({ ...extra, ...known }));
  const deepField = fc
    .tuple(fc.constantFrom('field', ...Object.keys(fields)), deepText)
    .map(([name, deep]) => `{${JSON.stringify(name)}:${deep}}`);
  // Bodies of good values only (some fields left out): what gets past validation, to the code behind it.
  const good = fc.record(fields, { requiredKeys: [] }).map((body) => JSON.stringify(body));
  return fc.oneof(
    { weight: 4, arbitrary: good },
    { weight: 12, arbitrary: objects },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((v) => JSON.stringify(v) ?? 'null') },
    { weight: 1, arbitrary: deepField },
    { weight: 1, arbitrary: deepText },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 200 }) },
    { weight: 1, arbitrary: objects.chain((text) => fc.nat(text.length).map((cut) => text.slice(0, cut))) },
  );
}
