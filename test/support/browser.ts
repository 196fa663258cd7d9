import { existsSync } from 'node:fs';
import { Browser, chromium } from 'playwright-core';

/** Debian's Chromium (never a downloaded browser); the tests skip without it, except under CI=true. */
export const CHROMIUM = ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p)) ?? null;

if (!CHROMIUM) {
  if (process.env.CI === 'true')
    throw new Error('CI=true but Debian chromium is not installed: browser tests cannot be skipped in CI');
  process.stdout.write("\n!!! BROWSER TESTS SKIPPED: install Debian's chromium package to run them. !!!\n\n");
}

export const describeWithBrowser = (name: string, fn: () => void) =>
  (CHROMIUM ? describe : describe.skip)(`${name} [Chromium]`, fn);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM!,
    headless: true,
    // The machine's network is closed: keep Chromium from calling home at every start.
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
