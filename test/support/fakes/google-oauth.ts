// Google's OAuth 2.0 token endpoint for the fake upstream (fake-upstream.ts routes POST /token here),
// as a service account's credential meets it: the JWT bearer grant (RFC 7523), a signed assertion
// checked with the account's public key, answered with an access token the fake's Google routes
// then require.
import { generateKeyPairSync, KeyObject, randomBytes, verify } from 'node:crypto';

/** The audience a service account's assertion must name: Google's token endpoint, whatever address it was posted to. */
export const GOOGLE_TOKEN_AUDIENCE = 'https://oauth2.googleapis.com/token';

const JWT_BEARER = 'urn:ietf:params:oauth:grant-type:jwt-bearer';

/** Seconds an issued token lives, as Google's answer says. */
export const FAKE_TOKEN_LIFETIME_S = 3599;

/** A service account's key file as Google's console downloads it. */
export interface ServiceAccountKeyFile {
  type: 'service_account';
  project_id: string;
  private_key_id: string;
  private_key: string;
  client_email: string;
  client_id: string;
  auth_uri: string;
  token_uri: string;
  auth_provider_x509_cert_url: string;
  client_x509_cert_url: string;
  universe_domain: string;
}

/**
 * A new service account for a test: its key file (its token endpoint `tokenUri`) and the public
 * half of its key pair, which the fake endpoint is given to check its assertions with.
 */
export function testServiceAccount(
  tokenUri: string,
  email = 'gateway-test@fake-project.iam.gserviceaccount.com',
): { key: ServiceAccountKeyFile; publicKey: KeyObject } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const project = email.split('@')[1].split('.')[0];
  return {
    publicKey,
    key: {
      type: 'service_account',
      project_id: project,
      private_key_id: randomBytes(20).toString('hex'),
      private_key: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
      client_email: email,
      client_id: String(BigInt(`0x${randomBytes(8).toString('hex')}`)),
      auth_uri: 'https://accounts.google.com/o/oauth2/auth',
      token_uri: tokenUri,
      auth_provider_x509_cert_url: 'https://www.googleapis.com/oauth2/v1/certs',
      client_x509_cert_url: `https://www.googleapis.com/robot/v1/metadata/x509/${encodeURIComponent(email)}`,
      universe_domain: 'googleapis.com',
    },
  };
}

/** What the endpoint answers: a status and Google's JSON body. */
export interface TokenAnswer {
  status: number;
  body: Record<string, unknown>;
}

const refuse = (error: string, description: string, status = 400): TokenAnswer => ({
  status,
  body: { error, error_description: description },
});

const base64url = (part: string) => Buffer.from(part, 'base64url');

/**
 * The token endpoint: trusts the accounts it is given, checks each assertion (RS256 signature by
 * the account's key, `iss` the account, `aud` Google's endpoint, the scope asked for, a lifetime of
 * at most an hour that has begun and not ended), and issues tokens it remembers.
 */
export class FakeGoogleOAuth {
  private readonly accounts = new Map<string, KeyObject>();
  /** Each issued token's scopes. */
  private readonly tokens = new Map<string, string[]>();
  /** Every token request's assertion claims, in order (also those refused). */
  readonly requests: Array<Record<string, unknown>> = [];
  /** Answer every request with this instead (the endpoint down: a 503). */
  failure: TokenAnswer | null = null;

  /** Accepts assertions signed by this account's key. */
  trust(email: string, publicKey: KeyObject): void {
    this.accounts.set(email, publicKey);
  }

  /**
   * What an `Authorization` header is worth: `valid` for a token this endpoint issued with `scope`
   * among its scopes, `insufficient` for one issued without it, `invalid` otherwise.
   */
  check(authorization: string | undefined, scope: string): 'valid' | 'insufficient' | 'invalid' {
    const token = /^Bearer (\S+)$/.exec(authorization ?? '')?.[1];
    const scopes = token === undefined ? undefined : this.tokens.get(token);
    return scopes === undefined ? 'invalid' : scopes.includes(scope) ? 'valid' : 'insufficient';
  }

  /** Tokens issued so far. */
  get issued(): number {
    return this.tokens.size;
  }

  /** POST /token with a form body. */
  answer(raw: string, contentType: string | undefined): TokenAnswer {
    if (this.failure) return this.failure;
    if (!contentType?.startsWith('application/x-www-form-urlencoded'))
      return refuse('invalid_request', 'Invalid request: expected a form body.');
    const form = new URLSearchParams(raw);
    if (form.get('grant_type') !== JWT_BEARER) return refuse('unsupported_grant_type', 'Invalid grant_type.');
    const parts = (form.get('assertion') ?? '').split('.');
    if (parts.length !== 3) return refuse('invalid_grant', 'Invalid JWT: the assertion is not a JWT.');
    let header: Record<string, unknown>;
    let claims: Record<string, unknown>;
    try {
      header = JSON.parse(base64url(parts[0]).toString('utf8'));
      claims = JSON.parse(base64url(parts[1]).toString('utf8'));
    } catch {
      return refuse('invalid_grant', 'Invalid JWT: the header or claims are not JSON.');
    }
    this.requests.push(claims);
    if (header.alg !== 'RS256') return refuse('invalid_grant', 'Invalid JWT: the algorithm must be RS256.');
    const key = typeof claims.iss === 'string' ? this.accounts.get(claims.iss) : undefined;
    if (!key) return refuse('invalid_grant', 'Invalid grant: account not found');
    const signed = Buffer.from(`${parts[0]}.${parts[1]}`);
    if (!verify('RSA-SHA256', signed, key, base64url(parts[2]))) return refuse('invalid_grant', 'Invalid JWT Signature.');
    if (claims.aud !== GOOGLE_TOKEN_AUDIENCE) return refuse('invalid_grant', 'Invalid JWT: Failed audience check.');
    const now = Math.floor(Date.now() / 1000);
    const { iat, exp } = claims as { iat?: unknown; exp?: unknown };
    if (typeof iat !== 'number' || typeof exp !== 'number' || iat > now + 60 || exp <= now || exp - iat > 3600)
      return refuse(
        'invalid_grant',
        'Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.',
      );
    if (typeof claims.scope !== 'string' || claims.scope.trim() === '')
      return refuse('invalid_scope', 'Invalid OAuth scope or ID token audience provided.');
    const token = `ya29.fake-${randomBytes(24).toString('base64url')}`;
    this.tokens.set(token, claims.scope.split(' '));
    return { status: 200, body: { access_token: token, expires_in: FAKE_TOKEN_LIFETIME_S, token_type: 'Bearer' } };
  }
}
