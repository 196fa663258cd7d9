import type { defaultProvider } from '@aws-sdk/credential-provider-node';
import { Hash } from '@smithy/hash-node';
import { SignatureV4 } from '@smithy/signature-v4';
import type { AuthorizedHost, HostAuthorizer, OutgoingCall } from '../host-kind';
import { madeOnce } from '../made-once';

/** Where a signer gets its credentials from (AWS's chain, or given ones in tests). */
export type AwsCredentials = ReturnType<typeof defaultProvider>;

/** The service name Bedrock Runtime's calls are signed for (its endpoint's is `bedrock-runtime`). */
export const SIGNING_SERVICE = 'bedrock';

/** The headers SigV4 adds to a call: the signature, its time and, with temporary credentials, their token. */
const SIGNATURE_HEADERS = ['authorization', 'x-amz-date', 'x-amz-security-token', 'x-amz-content-sha256'];

/**
 * AWS's standard credential chain (environment, shared config and SSO profiles, web identity, the
 * container and instance metadata services), made once: it keeps what it found until it expires.
 * Its library is loaded on the first signature: a gateway that signs no call never loads it.
 */
const chain = madeOnce(async () => (await import('@aws-sdk/credential-provider-node')).defaultProvider());
const awsCredentials: AwsCredentials = async (options) => (await chain())(options);

/** A SigV4 signer over one call exactly as it goes out (its host, path, headers and body). */
export function signingAuthorizer(region: string, credentials: AwsCredentials): HostAuthorizer {
  // AWS's Node hash (node:crypto's SHA-256): the pure-JavaScript one costs ~10 ms of CPU per MB of body, an agent's usual size.
  const sha256 = Hash.bind(null, 'sha256');
  const signer = new SignatureV4({ credentials, region, service: SIGNING_SERVICE, sha256 });
  return {
    async headers(call: OutgoingCall) {
      const signed = await signer.sign({
        method: call.method,
        protocol: call.url.protocol,
        hostname: call.url.hostname,
        port: call.url.port === '' ? undefined : Number(call.url.port),
        path: call.url.pathname,
        query: {},
        // `host` is signed as the transport will send it (with a port that is not the scheme's own).
        headers: { ...call.headers, host: call.url.host },
        body: call.body,
      });
      const added: Record<string, string> = {};
      for (const name of SIGNATURE_HEADERS) if (signed.headers[name] !== undefined) added[name] = signed.headers[name];
      return added;
    },
  };
}

/**
 * A Bedrock host's credential: a Bedrock API key (the entry's `apiKeyEnv`) goes as a bearer token
 * with the kind's headers and needs no signature; otherwise each call is signed with the AWS chain's
 * credentials for the entry's region.
 */
export function bedrockAuthorizer(host: AuthorizedHost): HostAuthorizer | null {
  if (host.apiKey !== null) return null;
  return signingAuthorizer(host.settings.region, awsCredentials);
}
