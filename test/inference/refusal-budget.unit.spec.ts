import { RefusalBudget } from '../../src/inference/refusal-budget';

describe('refusal budget', () => {
  it('records up to the budget per organization each second, then again the next second', () => {
    const budget = new RefusalBudget(3);
    const at = 1_700_000_000_000;
    expect([1, 2, 3, 4, 5].map((i) => budget.take('org-a', at + i))).toEqual([true, true, true, false, false]);
    // Another organization has its own budget.
    expect(budget.take('org-b', at + 6)).toBe(true);
    // A new second, a new budget.
    expect(budget.take('org-a', at + 1000)).toBe(true);
    expect(budget.take('org-a', at + 1001)).toBe(true);
  });

  it('records nothing with a budget of zero', () => {
    expect(new RefusalBudget(0).take('org-a', 0)).toBe(false);
  });
});
