// A fake Microsoft Entra ID for a tenant, over HTTPS on loopback (Microsoft's auth library takes no
// other authority): the OpenID configuration a client reads first, and the token endpoint a
// service principal's client-credentials grant is answered at, as login.microsoftonline.com answers.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

/** The fake's certificate (self-signed for 127.0.0.1, made for these tests only): a client must be told to trust it. */
export const ENTRA_TEST_CA = readFileSync(join(__dirname, 'entra-tls', 'localhost.cert.pem'), 'utf8');
const KEY = readFileSync(join(__dirname, 'entra-tls', 'localhost.key.pem'), 'utf8');

export interface TokenRequest {
  tenant: string;
  /** The form fields posted (grant_type, client_id, client_secret, scope, …). */
  form: Record<string, string>;
}

export interface FakeEntra {
  /** https://127.0.0.1:PORT: the authority host. */
  url: string;
  /** Every token request, in arrival order. */
  tokenRequests: TokenRequest[];
  /** The tokens issued, in order. */
  issued: string[];
  /** A service principal the token endpoint accepts. */
  accept(clientId: string, clientSecret: string): void;
  close(): Promise<void>;
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    req.on('data', (c: Buffer) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
};

/** Entra's error body (an OAuth error with its AADSTS code), as its token endpoint answers a bad credential. */
const oauthError = (error: string, description: string) => ({
  error,
  error_description: description,
  error_codes: [7000215],
  timestamp: new Date().toISOString(),
  trace_id: randomBytes(16).toString('hex'),
  correlation_id: randomBytes(16).toString('hex'),
});

export async function startFakeEntra(): Promise<FakeEntra> {
  const tokenRequests: TokenRequest[] = [];
  const issued: string[] = [];
  const principals = new Map<string, string>();
  let url = '';

  const server = createServer({ cert: ENTRA_TEST_CA, key: KEY }, (req, res) => {
    void (async () => {
      const path = new URL(req.url ?? '/', url).pathname;
      const configuration = /^\/([^/]+)\/v2\.0\/\.well-known\/openid-configuration$/.exec(path);
      if (req.method === 'GET' && configuration) {
        const tenant = configuration[1];
        return json(res, 200, {
          token_endpoint: `${url}/${tenant}/oauth2/v2.0/token`,
          token_endpoint_auth_methods_supported: ['client_secret_post', 'private_key_jwt', 'client_secret_basic'],
          jwks_uri: `${url}/${tenant}/discovery/v2.0/keys`,
          response_modes_supported: ['query', 'fragment', 'form_post'],
          subject_types_supported: ['pairwise'],
          id_token_signing_alg_values_supported: ['RS256'],
          response_types_supported: ['code', 'id_token', 'code id_token', 'id_token token'],
          scopes_supported: ['openid', 'profile', 'email', 'offline_access'],
          issuer: `${url}/${tenant}/v2.0`,
          request_uri_parameter_supported: false,
          userinfo_endpoint: 'https://graph.microsoft.com/oidc/userinfo',
          authorization_endpoint: `${url}/${tenant}/oauth2/v2.0/authorize`,
          device_authorization_endpoint: `${url}/${tenant}/oauth2/v2.0/devicecode`,
          http_logout_supported: true,
          frontchannel_logout_supported: true,
          end_session_endpoint: `${url}/${tenant}/oauth2/v2.0/logout`,
          claims_supported: ['sub', 'iss', 'aud', 'exp', 'iat', 'nonce', 'tid'],
          kerberos_endpoint: `${url}/${tenant}/kerberos`,
          tenant_region_scope: 'EU',
          cloud_instance_name: 'microsoftonline.com',
          cloud_graph_host_name: 'graph.windows.net',
          msgraph_host: 'graph.microsoft.com',
          rbac_url: 'https://pas.windows.net',
        });
      }
      const token = /^\/([^/]+)\/oauth2\/v2\.0\/token$/.exec(path);
      if (req.method === 'POST' && token) {
        const form = Object.fromEntries(new URLSearchParams(await readBody(req)));
        tokenRequests.push({ tenant: token[1], form });
        if (form.grant_type !== 'client_credentials')
          return json(
            res,
            400,
            oauthError('unsupported_grant_type', 'AADSTS70003: The app requested an unsupported grant type.'),
          );
        if (principals.get(form.client_id) !== form.client_secret)
          return json(
            res,
            401,
            oauthError('invalid_client', `AADSTS7000215: Invalid client secret provided for app '${form.client_id}'.`),
          );
        const accessToken = `eyJ0eXAiOiJKV1QifQ.${randomBytes(24).toString('base64url')}.fake-signature`;
        issued.push(accessToken);
        return json(res, 200, { token_type: 'Bearer', expires_in: 3599, ext_expires_in: 3599, access_token: accessToken });
      }
      json(
        res,
        404,
        oauthError('invalid_request', `AADSTS900561: The endpoint only accepts known routes (${req.method} ${path}).`),
      );
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    tokenRequests,
    issued,
    accept: (clientId, clientSecret) => void principals.set(clientId, clientSecret),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
