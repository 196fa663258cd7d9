import { type Asker, keyNotFound, keyVisibleTo, OPERATOR } from '../../../src/keys/api-key/api-key.decider';
import { otherPlatform, owner, platform, viewer } from '../api-key/given';

/** Which keys an asker sees when it lists or reads them: the same rule that decides whom it may manage. */

const ordinaryOfAcme = { orgId: 'o1' };
const managementOfAcme = { orgId: 'o1', kind: 'management' as const };
const ordinaryOfOther = { orgId: 'o2' };

describe('list and read keys', () => {
  it("every member sees its organization's keys, management keys included; no other organization's", () => {
    for (const actor of [owner, viewer]) {
      const asker: Asker = { actor, orgId: 'o1' };
      expect(keyVisibleTo(asker, ordinaryOfAcme)).toBe(true);
      expect(keyVisibleTo(asker, managementOfAcme)).toBe(true);
      expect(keyVisibleTo(asker, ordinaryOfOther)).toBe(false);
    }
  });

  it("a management key sees its organization's ordinary keys only", () => {
    const asker: Asker = { actor: platform, orgId: 'o1' };
    expect(keyVisibleTo(asker, ordinaryOfAcme)).toBe(true);
    expect(keyVisibleTo(asker, managementOfAcme)).toBe(false);
    expect(keyVisibleTo(asker, ordinaryOfOther)).toBe(false);
    expect(keyVisibleTo({ actor: otherPlatform, orgId: 'o2' }, ordinaryOfAcme)).toBe(false);
  });

  it('the operator sees every key of the organization it names, or every key naming none; no one else names none', () => {
    expect(keyVisibleTo({ actor: OPERATOR, orgId: 'o1' }, managementOfAcme)).toBe(true);
    expect(keyVisibleTo({ actor: OPERATOR, orgId: 'o1' }, ordinaryOfOther)).toBe(false);
    expect(keyVisibleTo({ actor: OPERATOR, orgId: null }, ordinaryOfOther)).toBe(true);
    expect(keyVisibleTo({ actor: owner, orgId: null }, ordinaryOfAcme)).toBe(false);
  });

  it('a key not seen is not found, in the words each asker has always been given', () => {
    expect(keyNotFound({ actor: platform, orgId: 'o1' }, 'k2').message).toBe('no key k2 in this organization');
    expect(keyNotFound({ actor: owner, orgId: 'o1' }, 'k2').message).toBe('no such key in this organization');
    expect(keyNotFound({ actor: OPERATOR, orgId: null }, 'k2').message).toBe('no key k2');
    expect(keyNotFound({ actor: platform, orgId: 'o1' }, 'x'.repeat(100)).message).toBe(
      `no key ${'x'.repeat(64)} in this organization`,
    );
  });
});
