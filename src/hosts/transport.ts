import type { OnApplicationShutdown } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { createParser } from 'eventsource-parser';
import { Observable } from 'rxjs';
import { errors as undiciErrors, Pool } from 'undici';
import type { CatalogueHost } from '../catalogue/catalogue';
import { CanonicalEvent, CanonicalRequest, HostError } from '../pipeline/canonical';
import type { HostKind } from './host-kind';

export interface TransportTimeouts {
  /** Longest wait for a streamed response to begin (its headers): a host silent this long is skipped. */
  firstByteMs: number;
  /**
   * Longest wait for a whole (non-streamed) reply, whose headers come only once it is generated:
   * a long generation cannot be told from a stuck host, so this is the request's own limit.
   */
  replyMs: number;
  /** Longest silence inside a response body. */
  idleMs: number;
}

/**
 * HTTP to upstream hosts: one keep-alive pool per origin, shared by every request. Knows no
 * wire format: the host kind builds the request and decodes the stream.
 */
export class HostTransport implements OnApplicationShutdown {
  private readonly pools = new Map<string, Pool>();

  private readonly bases = new Map<string, { origin: string; path: string }>();

  constructor(private readonly timeouts: TransportTimeouts) {}

  /** A host's origin and version path, parsed once. */
  private base(baseUrl: string): { origin: string; path: string } {
    let base = this.bases.get(baseUrl);
    if (!base) {
      const url = new URL(baseUrl);
      base = { origin: url.origin, path: url.pathname.replace(/\/$/, '') };
      this.bases.set(baseUrl, base);
    }
    return base;
  }

  private pool(origin: string): Pool {
    let pool = this.pools.get(origin);
    if (!pool) {
      // Streams can last minutes: allow many at once to one host (a stream holds its connection).
      pool = new Pool(origin, { connections: 8192, pipelining: 1, keepAliveTimeout: 30_000 });
      this.pools.set(origin, pool);
    }
    return pool;
  }

  /**
   * Calls a host, streamed or for the whole reply as the request says. Emits `ready` when the
   * upstream accepts, then canonical events; errors are HostErrors. Unsubscribing aborts the
   * upstream request at once.
   */
  call(kind: HostKind, host: CatalogueHost, hostModel: string, request: CanonicalRequest): Observable<CanonicalEvent> {
    return new Observable<CanonicalEvent>((subscriber) => {
      // undici takes an emitter as its abort signal: cheaper than an AbortController per call.
      const abort = new EventEmitter();
      let aborted = false;
      const upstream = kind.buildRequest(request, hostModel, host.apiKey);
      const base = this.base(host.baseUrl);
      let produced = false;
      let finished = false;

      const fail = (error: unknown) => {
        if (finished || (aborted && subscriber.closed)) return;
        subscriber.error(toHostError(error, !produced));
      };

      (async () => {
        const response = await this.pool(base.origin).request({
          path: base.path + upstream.path,
          method: 'POST',
          headers: upstream.headers,
          body: JSON.stringify(upstream.body),
          signal: abort,
          headersTimeout: request.stream ? this.timeouts.firstByteMs : this.timeouts.replyMs,
          bodyTimeout: this.timeouts.idleMs,
        });
        if (response.statusCode >= 400) {
          const text = await response.body.text().catch(() => '');
          throw new HostError('status', kind.errorMessage(response.statusCode, text), response.statusCode);
        }
        subscriber.next({ type: 'ready' });
        if (!request.stream) {
          const events = kind.decodeReply(await response.body.text());
          finished = true;
          for (const event of events) subscriber.next(event);
          subscriber.complete();
          return;
        }
        const decoder = kind.decoder();
        let pending: CanonicalEvent[] = [];
        let decodeError: unknown = null;
        const parser = createParser({
          onEvent: (message) => {
            if (decodeError || decoder.done) return;
            try {
              pending.push(...decoder.push({ event: message.event, data: message.data }));
            } catch (error) {
              decodeError = error;
            }
          },
        });
        const utf8 = new TextDecoder();
        for await (const chunk of response.body) {
          parser.feed(utf8.decode(chunk as Buffer, { stream: true }));
          for (const event of pending) {
            if (event.type === 'text' || event.type === 'tool_call') produced = true;
            subscriber.next(event);
          }
          pending = [];
          if (decodeError) throw decodeError;
          if (decoder.done && !finished) {
            // The reply is complete: the client need not wait for the upstream to close its body,
            // which is read to its end (not destroyed: that costs an error object per request).
            finished = true;
            subscriber.complete();
          }
        }
        if (!decoder.done) throw new HostError('connection', 'upstream ended its stream before completing the reply', null, !produced);
      })().catch(fail);

      // Aborting is for calls still running (a client gone, a fallback): a finished one has nothing to stop.
      return () => {
        if (finished) return;
        aborted = true;
        abort.emit('abort');
      };
    });
  }

  /** Closes the pools with the application that owns them. */
  async onApplicationShutdown(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((pool) => pool.destroy()));
  }
}

function toHostError(error: unknown, beforeOutput: boolean): HostError {
  if (error instanceof HostError) return new HostError(error.kind, error.message, error.status, beforeOutput && error.beforeOutput);
  if (error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError) {
    return new HostError('timeout', 'upstream did not answer in time', null, beforeOutput);
  }
  const message = (error as Error)?.message ?? String(error);
  return new HostError('connection', `upstream connection failed: ${message}`, null, beforeOutput);
}
