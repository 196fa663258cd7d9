import { createServer, IncomingHttpHeaders, request } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A request as a client sent it, before the gateway read it. */
export interface SentRequest {
  method: string;
  /** With its query, as sent. */
  url: string;
  headers: IncomingHttpHeaders;
  raw: string;
}

export interface RecordingProxy {
  /** Point the client here instead of at the gateway. */
  url: string;
  sent: SentRequest[];
  close(): Promise<void>;
}

/**
 * A pass-through HTTP proxy in front of the gateway that records what the client sent: to compare
 * a real client's bodies with what reached the upstream. Responses are piped back untouched.
 */
export async function startRecordingProxy(target: string): Promise<RecordingProxy> {
  const sent: SentRequest[] = [];
  const upstream = new URL(target);
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      sent.push({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers, raw: raw.toString('utf8') });
      const forward = request(
        {
          host: upstream.hostname,
          port: upstream.port,
          method: req.method,
          path: req.url,
          headers: { ...req.headers, host: upstream.host },
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      forward.on('error', () => res.destroy());
      res.on('close', () => forward.destroy());
      forward.end(raw);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    sent,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
