/**
 * What an API key secret looks like, for the code that must recognise one without knowing how
 * keys are made or checked (identity does that): error messages mask any secret pasted into them.
 */
export const KEY_SECRET_PREFIX = 'sk-svc-';

const KEY_SECRETS_IN_TEXT = new RegExp(`${KEY_SECRET_PREFIX}[\\w-]*`, 'g');

/** Text that may hold a key secret (a path someone pasted one into), with every secret cut to its prefix. */
export const maskKeySecrets = (text: string): string => text.replace(KEY_SECRETS_IN_TEXT, `${KEY_SECRET_PREFIX}…`);
