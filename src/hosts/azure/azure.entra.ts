import type { ClientSecretCredentialOptions, TokenCredential } from '@azure/identity';
import type { HostAuthorizer } from '../host-kind';
import { madeOnce } from '../made-once';

/** The scope of an Entra ID token for Azure OpenAI's data plane. */
export const AZURE_OPENAI_SCOPE = 'https://cognitiveservices.azure.com/.default';

/**
 * The Entra ID credential of an `azure` host: a service principal's secret when AZURE_TENANT_ID,
 * AZURE_CLIENT_ID and AZURE_CLIENT_SECRET are all set (AZURE_AUTHORITY_HOST, read by the library,
 * names a sovereign cloud's login host), else DefaultAzureCredential's chain (workload or managed
 * identity, the Azure CLI's sign-in, …). `options`: the library's own, for the service principal.
 * The library is loaded when a credential is first made: a gateway with no Entra ID host never
 * loads it (about 10 MB of memory with the AWS chain, see bedrock.signing.ts).
 */
export async function entraCredential(
  env: Record<string, string | undefined> = process.env,
  options: ClientSecretCredentialOptions = {},
): Promise<TokenCredential> {
  const { ClientSecretCredential, DefaultAzureCredential } = await import('@azure/identity');
  const { AZURE_TENANT_ID: tenant, AZURE_CLIENT_ID: client, AZURE_CLIENT_SECRET: secret } = env;
  if (tenant && client && secret) return new ClientSecretCredential(tenant, client, secret, options);
  return new DefaultAzureCredential();
}

/**
 * `Authorization: Bearer` with a token of the credential for Azure OpenAI's scope, fetched by the
 * library and kept until shortly before it expires (then refreshed), so most calls wait for none.
 * The credential is made on the first call.
 */
export function entraAuthorizer(credential: () => Promise<TokenCredential>): HostAuthorizer {
  const token = madeOnce(async () => {
    const [{ getBearerTokenProvider }, made] = await Promise.all([import('@azure/identity'), credential()]);
    return getBearerTokenProvider(made, AZURE_OPENAI_SCOPE);
  });
  return { headers: async () => ({ authorization: `Bearer ${await (await token())()}` }) };
}
