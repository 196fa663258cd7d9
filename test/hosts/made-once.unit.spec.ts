import { madeOnce } from '../../src/hosts/made-once';

it('makes once for every ask, and again after a make that failed', async () => {
  let makes = 0;
  const failFirst = madeOnce(async () => {
    makes += 1;
    if (makes === 1) throw new Error('not yet');
    return `made ${makes}`;
  });
  await expect(failFirst()).rejects.toThrow('not yet');
  expect(await Promise.all([failFirst(), failFirst()])).toEqual(['made 2', 'made 2']);
  expect(await failFirst()).toBe('made 2');
  expect(makes).toBe(2);
});
