/**
 * Where the runtime (the projector, the sweeper, the read models' saves) tells the operator what
 * happens, each line at its level: info for what goes as it should, warn for a degraded service
 * retrying by itself (Redis away), error for a failure that loses something (a save not made, a
 * sweep not done). The service's is its pino logger; a tool's or a test's may be anything.
 */
export interface RuntimeLog {
  info: (line: string) => void;
  warn: (line: string) => void;
  error: (line: string) => void;
}

/** Nothing told. */
export const SILENT_LOG: RuntimeLog = { info: () => undefined, warn: () => undefined, error: () => undefined };

/** Every level's line to one function (a tool's or a test's). */
export const linesTo = (write: (line: string) => void): RuntimeLog => ({ info: write, warn: write, error: write });
