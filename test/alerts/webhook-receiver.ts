import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One POST a receiver got: its headers and raw body. */
export interface Received {
  headers: Record<string, string>;
  body: string;
}

/**
 * A real local HTTP receiver of webhooks, on a free port. Each request is answered by `answer` (a
 * status, or `hold`: never answered until the receiver closes), given how many came before it; each
 * arrival is told to the waiters.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  private waiters: Array<() => void> = [];
  private readonly held: ServerResponse[] = [];
  answer: (index: number, request: Received) => number | 'hold' = () => 200;

  private constructor(
    private readonly server: ReturnType<typeof createServer>,
    readonly url: string,
  ) {}

  static async start(): Promise<WebhookReceiver> {
    let receiver: WebhookReceiver | null = null;
    const server = createServer((req: IncomingMessage, res: ServerResponse) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => receiver!.take(req, Buffer.concat(chunks).toString('utf8'), res));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    receiver = new WebhookReceiver(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/alerts?token=t0ken`);
    return receiver;
  }

  private take(req: IncomingMessage, body: string, res: ServerResponse): void {
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, String(v)]));
    const received = { headers, body };
    const status = this.answer(this.received.length, received);
    this.received.push(received);
    if (status === 'hold') this.held.push(res);
    else res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'no');
    for (const w of this.waiters.splice(0)) w();
  }

  /** Resolves once `check` holds of what has been received (checked at each arrival). */
  async until(check: (received: Received[]) => boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!check(this.received)) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the receiver's condition not met within ${timeoutMs} ms; received ${this.received.length}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The distinct `webhook-id`s received, in order of first arrival. */
  ids(): string[] {
    return [...new Set(this.received.map((r) => r.headers['webhook-id']))];
  }

  async close(): Promise<void> {
    for (const res of this.held) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
