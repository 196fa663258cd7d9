import { writeSync } from 'node:fs';
import type { LoggerService } from '@nestjs/common';
import type { FastifyBaseLogger } from 'fastify';

/** Anything that looks like one of our API key secrets. */
const KEY_SECRET = /sk-svc-[A-Za-z0-9_-]*/g;
const KEY_SECRET_SHOWN = 'sk-svc-[redacted]';

/** A string with every API key secret in it replaced. */
export const scrubSecrets = (text: string): string =>
  text.includes('sk-svc-') ? text.replace(KEY_SECRET, KEY_SECRET_SHOWN) : text;

/** Headers and fields that carry credentials, wherever a log line has them. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers.cookie',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers.cookie',
  'headers["set-cookie"]',
  'authorization',
  'apiKey',
  'password',
  'secret',
  'cookie',
];

export interface LogSettings {
  level: string;
  pretty: boolean;
}

/** A destination pino writes lines to (tests pass one to read them). */
export interface LogStream {
  write(line: string): void;
}

/** For a short wait (Atomics.wait) while standard output is full. */
const PAUSE = new Int32Array(new SharedArrayBuffer(4));

/**
 * Writes all of `text` to a file descriptor synchronously, as pino's default destination does: a
 * full pipe (EAGAIN, when the descriptor is non-blocking) is waited out; a reader gone (EPIPE)
 * ends logging there (as pino does), and any other failure is thrown.
 */
function writeAllSync(fd: number, text: string): boolean {
  let bytes = Buffer.from(text);
  while (bytes.length > 0) {
    try {
      bytes = bytes.subarray(writeSync(fd, bytes));
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'EPIPE') return false;
      if (code !== 'EAGAIN') throw error;
      Atomics.wait(PAUSE, 0, 0, 10);
    }
  }
  return true;
}

/**
 * Standard output, written in batches: the lines logged in one turn of the event loop leave in
 * one synchronous write after it, rather than a write (a system call) per line as pino's
 * default destination makes. A line waits at most for the end of its turn; what is pending
 * when the process exits is written then.
 */
class BatchedStdout implements LogStream {
  private pending = '';
  private scheduled = false;
  private open = true;
  private readonly writePending = (): void => {
    this.scheduled = false;
    const lines = this.pending;
    this.pending = '';
    if (lines !== '' && this.open) this.open = writeAllSync(1, lines);
  };

  constructor() {
    process.once('exit', this.writePending);
  }

  /** pino's `logger.flush(done)` (the service calls it before exiting): what is pending is written, then `done`. */
  flush(done: () => void): void {
    this.writePending();
    done();
  }

  write(line: string): void {
    if (!this.open) return;
    this.pending += line;
    if (this.scheduled) return;
    this.scheduled = true;
    setImmediate(this.writePending);
  }
}

/** One per process: every logger writing to standard output shares its batches. */
let stdoutBatches: BatchedStdout | null = null;

/**
 * Fastify's logger (pino) as the service uses it: JSON lines at `level`, credentials redacted by
 * path and any key secret in a message or a string field replaced; pretty only when asked.
 */
export function loggerOptions(settings: LogSettings, stream?: LogStream): Record<string, unknown> {
  return {
    level: settings.level,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    hooks: {
      logMethod(this: unknown, args: unknown[], method: (...a: unknown[]) => void) {
        for (let i = 0; i < args.length; i++) {
          const arg = args[i];
          if (typeof arg === 'string') args[i] = scrubSecrets(arg);
        }
        method.apply(this, args);
      },
    },
    formatters: {
      log(object: Record<string, unknown>) {
        for (const field in object) {
          const value = object[field];
          if (typeof value === 'string' && value.includes('sk-svc-')) object[field] = scrubSecrets(value);
        }
        return object;
      },
    },
    serializers: {
      err: (error: Error) => ({
        type: error?.name,
        message: scrubSecrets(String(error?.message)),
        stack: error?.stack === undefined ? undefined : scrubSecrets(error.stack),
      }),
    },
    ...(settings.pretty && !stream
      ? { transport: { target: 'pino-pretty', options: { colorize: true } } }
      : { stream: stream ?? (stdoutBatches ??= new BatchedStdout()) }),
  };
}

/** Nest's own log lines (its start-up, a handler's warnings) through the same pino logger. */
export class NestPinoLogger implements LoggerService {
  constructor(private readonly logger: FastifyBaseLogger) {}
  /** Nest's info lines are its route mapping at start-up: debug here, so info stays one line per request. */
  log(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
  }
  error(message: unknown, ...rest: unknown[]) {
    const context = rest.length > 0 ? rest[rest.length - 1] : undefined;
    this.logger.error({ context }, String(message));
  }
  warn(message: unknown, context?: string) {
    this.logger.warn({ context }, String(message));
  }
  debug(message: unknown, context?: string) {
    this.logger.debug({ context }, String(message));
  }
  verbose(message: unknown, context?: string) {
    this.logger.trace({ context }, String(message));
  }
}
