import { readFile } from 'node:fs/promises';
import type { gaxios, GoogleAuth } from 'google-auth-library';
import type { HostAuthorizer } from '../host-kind';
import { madeOnce } from '../made-once';

/** The scope Vertex AI's calls need. */
export const CLOUD_PLATFORM_SCOPE = 'https://www.googleapis.com/auth/cloud-platform';

/** Google's token endpoint, where the auth library sends a service account's signed assertion. */
const GOOGLE_TOKEN_URL = 'https://oauth2.googleapis.com/token';

/** Longest a token request may take: a token endpoint that does not answer must not hold the call. */
const TOKEN_TIMEOUT_MS = 10_000;

interface KeyFile {
  type?: unknown;
  token_uri?: unknown;
}

/**
 * A credential file, read: its JSON, never its text in an error (it holds a private key). `where`
 * says how it was named (a host setting or GOOGLE_APPLICATION_CREDENTIALS).
 */
async function readKeyFile(path: string, where: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new Error(
      `the credentials file ${where} (${path}) cannot be read: ${(error as NodeJS.ErrnoException).code ?? 'error'}`,
    );
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) return parsed as Record<string, unknown>;
  } catch {
    // reported below, without the text
  }
  throw new Error(`the credentials file ${where} (${path}) is not a JSON object`);
}

/**
 * The HTTP client the auth library fetches tokens with. A service account's key file names its
 * token endpoint (`token_uri`), which the library ignores (it always posts to Google's): a file
 * naming another one (a private endpoint, a test's) is honoured here.
 */
function tokenTransporter(library: typeof gaxios, key: KeyFile | null): gaxios.Gaxios {
  // Node's own fetch: the library's default (node-fetch) is loaded by a dynamic import, which a
  // runtime without ES module loading (jest's sandbox) cannot do.
  const transporter = new library.Gaxios({ timeout: TOKEN_TIMEOUT_MS, fetchImplementation: fetch });
  const tokenUri = key?.type === 'service_account' && typeof key.token_uri === 'string' ? key.token_uri : null;
  if (tokenUri && tokenUri !== GOOGLE_TOKEN_URL)
    transporter.interceptors.request.add({
      resolved: async (config: gaxios.GaxiosOptionsPrepared) =>
        config.url.href === GOOGLE_TOKEN_URL ? { ...config, url: new URL(tokenUri) } : config,
    });
  return transporter;
}

/**
 * A Google Cloud credential through Google's own auth library: the key file the host names
 * (`credentialsFile`), else GOOGLE_APPLICATION_CREDENTIALS's, else the application default
 * credentials (gcloud's login, the metadata server). The library caches its access token and
 * refreshes it before it expires; each call gets `Authorization: Bearer …` (and the quota project,
 * when the credential names one).
 */
export function googleCredential(credentialsFile: string, env: NodeJS.ProcessEnv = process.env): HostAuthorizer {
  const named = credentialsFile !== '' ? { path: credentialsFile, where: 'named by the host' } : null;
  const fromEnv = env.GOOGLE_APPLICATION_CREDENTIALS
    ? { path: env.GOOGLE_APPLICATION_CREDENTIALS, where: 'GOOGLE_APPLICATION_CREDENTIALS' }
    : null;
  const file = named ?? fromEnv;
  // The library is loaded on the first call: a gateway with no Vertex AI host never loads it. A file
  // that could not be read is read again on the next call (it may have been fixed).
  const auth = madeOnce(async (): Promise<GoogleAuth> => {
    const credentials = file ? await readKeyFile(file.path, file.where) : null;
    const library = await import('google-auth-library');
    return new library.GoogleAuth({
      scopes: [CLOUD_PLATFORM_SCOPE],
      ...(credentials ? { credentials } : {}),
      clientOptions: { transporter: tokenTransporter(library.gaxios, credentials) },
    });
  });
  return {
    async headers(call) {
      const headers = await (await auth()).getRequestHeaders(call.url);
      return Object.fromEntries(headers.entries());
    },
  };
}
