import fc from 'fast-check';
import { nestsDeeperThan } from '../../src/http/json-body';
import { nested } from '../support/fuzz';

/** The depth of a parsed JSON value, counted the slow, obvious way. */
const depthOf = (value: unknown): number =>
  value !== null && typeof value === 'object' ? 1 + Math.max(0, ...Object.values(value).map(depthOf)) : 0;

describe('nestsDeeperThan', () => {
  it('counts objects and arrays, not brackets inside strings or escaped quotes', () => {
    expect(nestsDeeperThan(nested(128), 128)).toBe(false);
    expect(nestsDeeperThan(nested(129), 128)).toBe(true);
    expect(nestsDeeperThan(nested(129, 'object'), 128)).toBe(true);
    expect(nestsDeeperThan(JSON.stringify({ a: '[[[[[[', b: '"\\"{{{{' }), 2)).toBe(false);
    expect(nestsDeeperThan('{"a":"\\\\"}', 1)).toBe(false);
  });

  it('agrees with the depth of any parsed JSON value', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 8 }), (value, limit) => {
        expect(nestsDeeperThan(JSON.stringify(value), limit)).toBe(depthOf(value) > limit);
      }),
    );
  });
});
