import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FakeUpstream } from './fake-upstream';
import { testServiceAccount } from './fakes/google-oauth';
import { testCatalogueFile } from './gateway';

/**
 * A catalogue of a spec's own: its hosts and models beside the test catalogue's (testCatalogueFile),
 * built from the few pieces every host kind's spec writes its entries with.
 */

/** The test catalogue's file with a spec's own hosts and models after its own: a `catalogue` for startGateway. */
export const withOwn = (own: (fake: FakeUpstream) => { hosts: object[]; models: object[] }) => (fake: FakeUpstream) => {
  const file = testCatalogueFile(fake);
  const { hosts, models } = own(fake);
  return { hosts: [...file.hosts, ...hosts], models: [...file.models, ...models] };
};

/**
 * A host called once per request, as the test catalogue's are: what a failure leads to is the
 * model's next host (retrying the same one is test/routing/retries.spec's).
 */
export const calledOnce = <H extends object>(host: H) => ({ ...host, retry: { attempts: 0 } });

/**
 * A chat model, named by its slug, served by `hosts` in order: reasoning, with 128,000 tokens of
 * context and 1,000 of output, unless `limits` says otherwise.
 */
export const modelEntry = (
  m: { slug: string; id: string },
  hosts: unknown[],
  limits: { contextLength?: number; maxOutputTokens?: number; reasoning?: boolean } = {},
) => ({
  slug: m.slug,
  id: m.id,
  name: m.slug,
  contextLength: limits.contextLength ?? 128_000,
  maxOutputTokens: limits.maxOutputTokens ?? 1000,
  reasoning: limits.reasoning ?? true,
  hosts,
});

/** The service account of the vertex host `id`: its own, so that a test can count each host's token requests. */
export const vertexAccount = (id: string) => `${id}@test-project.iam.gserviceaccount.com`;

/**
 * A `vertex` host on the fake (project test-project, location us-east5): its service account's key
 * written into the folder `keys`, the account trusted by the fake's token endpoint, which the key
 * names unless `tokenUri` says otherwise.
 */
export function vertexHost(fake: FakeUpstream, id: string, keys: string, tokenUri = `${fake.url}/token`) {
  const { key, publicKey } = testServiceAccount(tokenUri, vertexAccount(id));
  fake.googleOAuth.trust(key.client_email, publicKey);
  const credentialsFile = join(keys, `${id}.json`);
  writeFileSync(credentialsFile, JSON.stringify(key));
  return {
    id,
    kind: 'vertex',
    baseUrl: `${fake.url}/v1/projects/test-project/locations/us-east5`,
    project: 'test-project',
    location: 'us-east5',
    credentialsFile,
  };
}
