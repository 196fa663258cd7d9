import { hostname } from 'node:os';
import type { RuntimeLog } from '../runtime-log/runtime-log';
import { scrubSecrets } from './logging';

const LEVELS = { trace: 10, debug: 20, info: 30, warn: 40, error: 50, fatal: 60, silent: Infinity } as const;

/**
 * Lines shaped as the service's pino lines (JSON on standard output: `level`, `time`, `pid`,
 * `hostname`, `msg`, and `fields`; plain for a terminal with `pretty`), for what is told before the
 * service's logger exists (start-up, the replay of the log) and by a worker set's primary.
 */
export function jsonLinesLog(
  settings: { level: string; pretty: boolean },
  fields: Record<string, string> = {},
  write: (text: string) => void = (text) => void process.stdout.write(text),
): RuntimeLog {
  const threshold = LEVELS[settings.level as keyof typeof LEVELS] ?? LEVELS.info;
  const at = (level: 'info' | 'warn' | 'error') => (message: string) => {
    if (LEVELS[level] < threshold) return;
    const msg = scrubSecrets(message);
    const who = Object.values(fields).join(' ');
    write(
      settings.pretty
        ? `${new Date().toISOString()} ${level.toUpperCase()} (${who === '' ? '' : `${who} `}${process.pid}): ${msg}\n`
        : `${JSON.stringify({ level: LEVELS[level], time: Date.now(), pid: process.pid, hostname: hostname(), ...fields, msg })}\n`,
    );
  };
  return { info: at('info'), warn: at('warn'), error: at('error') };
}
