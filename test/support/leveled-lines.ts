import type { RuntimeLog } from '../../src/runtime-log/runtime-log';

export interface LeveledLine {
  level: keyof RuntimeLog;
  line: string;
}

/** The runtime's lines with their levels, and a way to await one. */
export class LeveledLines implements RuntimeLog {
  readonly lines: LeveledLine[] = [];
  private waiters: Array<{ match: (l: LeveledLine) => boolean; resolve: (l: LeveledLine) => void }> = [];
  info = (line: string) => this.add('info', line);
  warn = (line: string) => this.add('warn', line);
  error = (line: string) => this.add('error', line);

  private add(level: keyof RuntimeLog, line: string): void {
    const entry = { level, line };
    this.lines.push(entry);
    this.waiters = this.waiters.filter((w) => (w.match(entry) ? (w.resolve(entry), false) : true));
  }

  /** The first line `match` accepts, now or when it is written (rejects after `timeoutMs`). */
  waitFor(match: (l: LeveledLine) => boolean, timeoutMs = 10_000): Promise<LeveledLine> {
    const seen = this.lines.find(match);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no such runtime line; got:\n${JSON.stringify(this.lines)}`)), timeoutMs);
      this.waiters.push({
        match,
        resolve: (l) => {
          clearTimeout(timer);
          resolve(l);
        },
      });
    });
  }
}
