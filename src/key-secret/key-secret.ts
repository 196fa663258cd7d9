/**
 * What an API key secret looks like, for the code that must recognise one without knowing how
 * keys are made or checked (identity does that), and the one function that masks secrets in
 * text before it is stored (an event, the request log), echoed (an error) or logged.
 */
export const KEY_SECRET_PREFIX = 'sk-svc-';

/**
 * Our key secrets (cut to their prefix), and provider-style keys (`sk-…`, `sk-ant-…`, `sk-proj-…`)
 * an upstream or a client may paste into text. Our prefix is matched at a word's start, or anywhere
 * when a secret's worth of characters follows: names such as "Risk-svc-team" are left alone.
 * Masking twice changes nothing.
 */
const KEY_SECRETS_IN_TEXT = new RegExp(
  `\\b${KEY_SECRET_PREFIX}[\\w-]*…?|${KEY_SECRET_PREFIX}[\\w-]{16,}…?|\\bsk-(?!svc-)[\\w-]{12,}`,
  'g',
);

/** The keys this process sends to hosts (read from the environment by the catalogue). */
const hostKeys = new Set<string>();
let hostKeysInText: RegExp | null = null;

/** Shorter values are not masked: they would hide ordinary words, and no real key is that short. */
const SHORTEST_HOST_KEY = 8;

/** Tells the masking about a host's key, so that an upstream echoing it never passes it on. */
export function rememberHostKey(key: string | null): void {
  if (!key || key.length < SHORTEST_HOST_KEY || hostKeys.has(key)) return;
  hostKeys.add(key);
  const escaped = [...hostKeys].sort((a, b) => b.length - a.length).map((k) => k.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
  hostKeysInText = new RegExp(escaped.join('|'), 'g');
}

/** Text that may hold a secret, with every key secret cut to its prefix and every host key replaced. */
export function maskSecrets(text: string): string {
  const masked = text.replace(KEY_SECRETS_IN_TEXT, (found) =>
    found.startsWith(KEY_SECRET_PREFIX) ? `${KEY_SECRET_PREFIX}…` : 'sk-…',
  );
  return hostKeysInText ? masked.replace(hostKeysInText, '[host key]') : masked;
}
