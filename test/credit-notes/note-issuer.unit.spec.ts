import { issuerLine, noteIssuer } from '../../src/credit-notes/credit-notes';

describe('who issued a credit note', () => {
  const members = new Map([['user-1', { email: 'owner@example.com' }]]);

  it.each([
    ['the operator tool', 'cli', null, false, 'the operator tool'],
    [
      'a key the operator made',
      'key-1',
      { madeBy: { kind: 'operator' as const } },
      false,
      'management key key-1 (made by the operator)',
    ],
    [
      'a key a member made',
      'key-2',
      { madeBy: { kind: 'member' as const, userId: 'user-1' } },
      true,
      'management key key-2 (made by user user-1)',
    ],
    ['a key from before makers were recorded', 'key-3', { madeBy: null }, true, 'management key key-3 (maker not recorded)'],
    ['a dashboard user', 'user-1', null, true, 'dashboard user user-1 <owner@example.com>'],
    ['a user no longer a member', 'user-9', null, true, 'dashboard user user-9'],
  ])('%s', (_, issuedBy, key, unexpected, line) => {
    const issuer = noteIssuer(issuedBy, key, members);
    expect(issuer.unexpected).toBe(unexpected);
    expect(issuerLine(issuer)).toBe(line);
  });
});
