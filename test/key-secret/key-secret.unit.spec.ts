import fc from 'fast-check';
import { maskSecrets, rememberHostKey } from '../../src/key-secret/key-secret';

describe('maskSecrets', () => {
  const ours = `sk-svc-${'A1b2_c3-'.repeat(6)}`;

  it('cuts our key secrets to their prefix and hides provider-style keys', () => {
    expect(maskSecrets(`model "${ours}" not found`)).toBe('model "sk-svc-…" not found');
    expect(maskSecrets(`Incorrect API key provided: sk-proj-${'x'.repeat(40)}.`)).toBe('Incorrect API key provided: sk-….');
    expect(maskSecrets('sk-ant-api03-abcdefghijklmnop')).toBe('sk-…');
    // ordinary text is left alone
    expect(maskSecrets('ask-me anything; task-list; sk-short')).toBe('ask-me anything; task-list; sk-short');
    // names that merely contain the prefix's letters, as names are masked before they are stored
    expect(maskSecrets('Risk-svc-team, task-svc-ops@example.com')).toBe('Risk-svc-team, task-svc-ops@example.com');
    expect(maskSecrets(`team ${ours}`)).toBe('team sk-svc-…');
    expect(maskSecrets(`team-${ours}, key=${ours}, glued${ours}`)).toBe('team-sk-svc-…, key=sk-svc-…, gluedsk-svc-…');
  });

  it('replaces the keys this process sends to hosts, wherever they appear', () => {
    rememberHostKey('hostkey-0123456789');
    rememberHostKey('short'); // too short to be a key: never masked
    expect(maskSecrets('upstream says: bad key hostkey-0123456789!')).toBe('upstream says: bad key [host key]!');
    expect(maskSecrets('a short answer')).toBe('a short answer');
  });

  it('leaves no secret behind in any text, and masking twice changes nothing', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (before, after) => {
        const masked = maskSecrets(`${before}${ours}${after}`);
        expect(masked).not.toContain(ours.slice(7));
        expect(maskSecrets(masked)).toBe(masked);
      }),
    );
  });
});
