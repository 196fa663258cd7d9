import { ClientSecretCredential, DefaultAzureCredential } from '@azure/identity';
import { firstValueFrom, Observable, toArray } from 'rxjs';
import { CanonicalEvent, CanonicalRequest, HostError } from '../../src/canonical/canonical';
import { AZURE_OPENAI_SCOPE, entraAuthorizer, entraCredential } from '../../src/hosts/azure/azure.entra';
import { azureHost } from '../../src/hosts/azure/azure.host';
import type { HostKind } from '../../src/hosts/host-kind';
import { HostTransport } from '../../src/hosts/transport';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { ENTRA_TEST_CA, FakeEntra, startFakeEntra } from '../support/fakes/entra';

/**
 * An `azure` host authorized with Microsoft Entra ID: a service principal's token, fetched by
 * Microsoft's own library (@azure/identity) from a fake Entra tenant on loopback, sent as
 * `Authorization: Bearer` on each call (never the api-key), kept by the library across calls; a
 * credential Entra refuses is a failure before output, worth the next host, its secret never told.
 *
 * The library only talks to an authority over HTTPS: the fake's certificate is self-signed, so the
 * credential is given it to trust (tlsOptions) and told not to look the fake authority up among
 * Microsoft's clouds (disableInstanceDiscovery) — the only options these tests add to the kind's own.
 */

const TENANT = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const CLIENT = '0f8fad5b-d9cb-469f-a165-70867728950e';
const SECRET = 'fake-entra-client-secret-Q8x~9a7b6c5d4e3f2g1h';

const request = (stream: boolean): CanonicalRequest => ({
  system: [],
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  stop: [],
  stream,
  maxTokens: 100,
});

async function failure(events: Observable<CanonicalEvent>): Promise<unknown> {
  try {
    await firstValueFrom(events.pipe(toArray()));
    return null;
  } catch (error) {
    return error;
  }
}

describe('an azure host with Entra ID', () => {
  let entra: FakeEntra;
  let fake: FakeUpstream;
  let transport: HostTransport;
  beforeAll(async () => {
    [entra, fake] = await Promise.all([startFakeEntra(), startFakeUpstream()]);
    entra.accept(CLIENT, SECRET);
    transport = new HostTransport({ firstByteMs: 5_000, replyMs: 5_000, idleMs: 5_000 });
  });
  afterAll(async () => {
    await transport.onApplicationShutdown();
    await Promise.all([entra.close(), fake.close()]);
  });

  /** The service principal's environment, with the secret given. */
  const env = (secret: string) => ({ AZURE_TENANT_ID: TENANT, AZURE_CLIENT_ID: CLIENT, AZURE_CLIENT_SECRET: secret });
  /** The kind, its credential the one the kind makes for this environment, trusting the fake tenant. */
  const withCredential = (secret: string): HostKind => ({
    ...azureHost,
    authorizer: () =>
      entraAuthorizer(() =>
        entraCredential(env(secret), {
          authorityHost: entra.url,
          disableInstanceDiscovery: true,
          tlsOptions: { ca: ENTRA_TEST_CA },
        }),
      ),
  });
  const host = (id: string) => ({
    id,
    baseUrl: fake.url,
    // A key the entry may name: with Entra ID it is never sent.
    apiKey: 'an-api-key-not-to-send',
    settings: { endpoint: '', route: 'deployments', api: 'chat-completions', apiVersion: '2024-10-21', auth: 'entra' },
  });

  it('sends a token of the service principal for Azure OpenAI’s scope as a bearer, fetched once for many calls', async () => {
    const kind = withCredential(SECRET);
    const endpoint = host('entra-azure');
    fake.on('entra-deployment', { kind: 'reply', reply: { text: 'Hello' } });
    for (const stream of [false, true, false]) {
      const events = await firstValueFrom(transport.call(kind, endpoint, 'entra-deployment', request(stream)).pipe(toArray()));
      expect(
        events
          .filter((e) => e.type === 'text')
          .map((e) => (e as { text: string }).text)
          .join(''),
      ).toBe('Hello');
    }
    const sent = fake.requests.filter((r) => r.body?.model === 'entra-deployment');
    expect(sent).toHaveLength(3);
    expect(entra.issued).toHaveLength(1);
    for (const r of sent) {
      expect(r.path).toBe('/openai/deployments/entra-deployment/chat/completions');
      expect(r.headers.authorization).toBe(`Bearer ${entra.issued[0]}`);
      expect(r.headers['api-key']).toBeUndefined();
    }
    expect(entra.tokenRequests).toEqual([
      {
        tenant: TENANT,
        form: expect.objectContaining({
          grant_type: 'client_credentials',
          client_id: CLIENT,
          client_secret: SECRET,
          scope: AZURE_OPENAI_SCOPE,
        }),
      },
    ]);
  });

  it('a credential Entra refuses: a connection failure before output (the next host is tried), the secret not told, the host not called', async () => {
    const wrong = 'wrong-entra-client-secret-Z1y~2x3w4v5u6t7s8r';
    fake.on('refused-deployment', { kind: 'reply', reply: { text: 'never' } });
    const error = await failure(
      transport.call(withCredential(wrong), host('entra-refused'), 'refused-deployment', request(true)),
    );
    expect(error).toBeInstanceOf(HostError);
    expect(error).toMatchObject({ kind: 'connection', beforeOutput: true, retryable: true });
    expect((error as HostError).message).toMatch(/^no credential for the host: .*AADSTS7000215/s);
    expect((error as HostError).message).not.toContain(wrong);
    expect(entra.tokenRequests.at(-1)!.form.client_secret).toBe(wrong);
    expect(fake.requests.some((r) => r.body?.model === 'refused-deployment')).toBe(false);
  });

  it('the kind’s credential: the service principal’s when its three variables are set, else DefaultAzureCredential’s chain', async () => {
    expect(await entraCredential(env(SECRET))).toBeInstanceOf(ClientSecretCredential);
    expect(await entraCredential({ AZURE_TENANT_ID: TENANT, AZURE_CLIENT_ID: CLIENT })).toBeInstanceOf(DefaultAzureCredential);
    expect(await entraCredential({})).toBeInstanceOf(DefaultAzureCredential);
  });
});
