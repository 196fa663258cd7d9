import type { LogStream } from '../../src/observability/logging';

export type LogLine = Record<string, any>;

/** A pino destination that keeps every line, parsed, and lets a test await the line it expects. */
export class LogCapture implements LogStream {
  readonly raw: string[] = [];
  readonly lines: LogLine[] = [];
  private waiters: Array<{ match: (line: LogLine) => boolean; resolve: (line: LogLine) => void }> = [];

  write(chunk: string): void {
    this.raw.push(chunk);
    for (const text of chunk.split('\n')) {
      if (!text) continue;
      const line = JSON.parse(text) as LogLine;
      this.lines.push(line);
      this.waiters = this.waiters.filter((w) => {
        if (!w.match(line)) return true;
        w.resolve(line);
        return false;
      });
    }
  }

  /** The first line `match` accepts, now or when it is written (rejects after `timeoutMs`). */
  waitFor(match: (line: LogLine) => boolean, timeoutMs = 5_000): Promise<LogLine> {
    const seen = this.lines.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no such log line within ${timeoutMs} ms:\n${this.raw.join('')}`)),
        timeoutMs,
      );
      this.waiters.push({
        match,
        resolve: (line) => {
          clearTimeout(timer);
          resolve(line);
        },
      });
    });
  }

  /** The one-per-request line of request `requestId`. */
  request(requestId: string): Promise<LogLine> {
    return this.waitFor((l) => l.msg === 'request' && l.requestId === requestId);
  }
}

/**
 * A pino destination that keeps nothing but the lines holding something secret: a key secret (any
 * `sk-svc-` string not redacted), one of `secrets` (host keys), or a password field's value. Every
 * test gateway logs into one, and its close fails when any line did: so every suite's traffic is
 * searched, not only the log tests'.
 */
export class SecretScan implements LogStream {
  readonly leaks: string[] = [];
  private static readonly KEY_SECRET = /sk-svc-(?!\[redacted\])[A-Za-z0-9_-]{16,}/;

  constructor(private readonly secrets: string[]) {}

  write(chunk: string): void {
    if (
      SecretScan.KEY_SECRET.test(chunk) ||
      this.secrets.some((secret) => chunk.includes(secret)) ||
      /"password":"(?!\[redacted\])/.test(chunk)
    ) {
      this.leaks.push(chunk);
    }
  }
}
