import { hashKeySecret, keyPrefixOf, newKeySecret } from '../../src/identity/secrets';
import { apiKeyStream } from '../../src/keys/api-key/api-key.events';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv } from '../support/gateway';
import { operatorToolJson } from '../support/operator-tool';
import { Child, startService } from '../support/processes';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';

/**
 * Billing rights on a log that holds keys of both origins, served by the service as its own
 * process: a management key the operator tool made with billing rights issues credit notes; one an
 * owner made with them in the dashboard before (its event names no maker) issues none.
 */

let fake: FakeUpstream;
let t: TestRuntime;
let service: Child | null = null;

beforeAll(async () => {
  fake = await startFakeUpstream();
  t = await openTestRuntime();
});
afterAll(async () => {
  service?.process.kill('SIGKILL');
  await fake.close();
  await t.cleanup();
});

it("the operator tool's billing key issues credit notes; a billing key an owner made in the dashboard before issues none", async () => {
  const env = serviceEnv(t, fake);
  const orgId = await fundedOrganization(t.runtime, 1_000_000_000);
  // As the dashboard wrote an owner's billing key before: billing rights, no word of who made the key.
  const ownersSecret = newKeySecret();
  const ownersKey = 'owners-billing-key';
  const data = {
    ...{ keyId: ownersKey, orgId, name: 'finance', hash: hashKeySecret(ownersSecret), prefix: keyPrefixOf(ownersSecret) },
    ...{ createdAt: Date.now(), kind: 'management' as const, billing: true as const },
  };
  await t.runtime.events.append(apiKeyStream(ownersKey), [{ type: 'ApiKeyCreated', data }], 'no_stream');
  await t.runtime.close();

  const made = await operatorToolJson(env, ['keys', 'create', '--org', orgId, '--name', 'ops', '--management', '--billing']);
  expect(made).toMatchObject({ kind: 'management', billing: true });

  const started = await startService(env);
  service = started.service;
  const issue = async (secret: string, idempotencyKey: string) => {
    const res = await fetch(`${started.base}/api/v1/credit-notes`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ kind: 'adjustment', amount: '2.5', reason: 'goodwill', idempotency_key: idempotencyKey }),
    });
    return { status: res.status, body: (await res.json()) as any };
  };

  const refused = await issue(ownersSecret, 'owners-1');
  expect(refused.status).toBe(403);
  expect(refused.body.error.message).toMatch(
    /billing rights by the gateway's operator \(model-gateway keys create --management --billing\)/,
  );
  const issued = await issue(made.secret as string, 'ops-1');
  expect(issued.status).toBe(201);
  expect(issued.body.data).toMatchObject({ kind: 'adjustment', amount_nano: 2_500_000_000, issued_by: made.keyId });

  // The balance: the grant and the operator's adjustment, nothing of the owner's key.
  const shown = await operatorToolJson(env, ['credits', 'show', '--org', orgId]);
  expect(Number(shown.granted)).toBe(3.5);
});
