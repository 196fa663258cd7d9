import { Webhook } from 'standardwebhooks';
import { AlertSecrets, signedHeaders } from '../../src/alerts/signing';

/** Signing as Standard Webhooks specifies it, checked with its reference library; secrets derived, never stored. */

const secrets = AlertSecrets.fromEnvironment('/nonexistent', 'a server secret of at least thirty-two characters');

it("signs so that Standard Webhooks' library verifies, and refuses a changed body, id or time", () => {
  const secret = secrets.secretFor('org-1', 'secret-1');
  const body = JSON.stringify({ type: 'test', timestamp: '2026-11-26T12:00:00.000Z', data: { org_id: 'org-1' } });
  const now = Math.floor(Date.now() / 1000);
  const headers = signedHeaders(secret, 'al_7_test', now, body);
  expect(headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
  expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
  expect(() => new Webhook(secret).verify(body.replace('org-1', 'org-2'), headers)).toThrow();
  expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'al_8_test' })).toThrow();
  expect(() => new Webhook(secret).verify(body, { ...headers, 'webhook-timestamp': String(now + 1) })).toThrow();
  // The library's own signature of the same message is ours.
  expect(new Webhook(secret).sign('al_7_test', new Date(now * 1000), body)).toBe(headers['webhook-signature']);
});

it('derives one secret per organization and issue, the same from the same server secret, another from another', () => {
  const a = secrets.secretFor('org-1', 'secret-1');
  expect(a).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
  expect(
    AlertSecrets.fromEnvironment('/nonexistent', 'a server secret of at least thirty-two characters').secretFor(
      'org-1',
      'secret-1',
    ),
  ).toBe(a);
  expect(secrets.secretFor('org-1', 'secret-2')).not.toBe(a);
  expect(secrets.secretFor('org-2', 'secret-1')).not.toBe(a);
  expect(
    AlertSecrets.fromEnvironment('/nonexistent', 'another server secret, also long enough').secretFor('org-1', 'secret-1'),
  ).not.toBe(a);
});
