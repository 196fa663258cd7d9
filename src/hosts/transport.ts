import { maskSecrets } from '../key-secret/key-secret';
import type { OnApplicationShutdown } from '@nestjs/common';
import type { IncomingHttpHeaders } from 'node:http';
import { TextDecoder } from 'node:util';
import { createParser } from 'eventsource-parser';
import { Observable, type Subscriber } from 'rxjs';
import { type Dispatcher, errors as undiciErrors, Pool } from 'undici';
import { CanonicalEvent, CanonicalRequest, HostError, isOutput, PassThrough } from '../canonical/canonical';
import type {
  HostAuthorizer,
  HostKind,
  HostSettings,
  SseMessage,
  StreamDecoder,
  StreamFraming,
  UpstreamRequest,
} from './host-kind';
import { parseRetryAfter } from './retry-after';

/** Longest a pool may take to close gently at shutdown before its calls are cut. */
const POOL_CLOSE_MS = 5_000;

/** Where a host is and the credential it takes: all the transport needs of a catalogue host. */
export interface HostEndpoint {
  readonly id: string;
  /** Includes the version path: an openai host posts to `{baseUrl}/chat/completions`. */
  readonly baseUrl: string;
  readonly apiKey: string | null;
  /** The entry's own fields its kind reads (a region, an API version). */
  readonly settings: HostSettings;
}

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

  /** Each catalogue host's authorizer (null: its kind needs none), made on its first call; a reloaded catalogue's hosts get new ones. */
  private readonly authorizers = new WeakMap<HostEndpoint, HostAuthorizer | null>();

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
   * upstream request at once. `traceHeaders`: the call's trace context (`traceparent`), when traced.
   */
  call(
    kind: HostKind,
    host: HostEndpoint,
    hostModel: string,
    request: CanonicalRequest,
    traceHeaders?: Record<string, string>,
  ): Observable<CanonicalEvent> {
    return new Observable<CanonicalEvent>((subscriber) => {
      const upstream = kind.buildRequest(request, hostModel, host.apiKey, host.settings);
      const reply = new HostReply(kind, host.settings, hostModel, request.stream, upstream.passThrough === true, subscriber);
      const headers = traceHeaders ? { ...upstream.headers, ...traceHeaders } : upstream.headers;
      const dispatch = (call: PreparedCall) =>
        this.pool(call.origin).dispatch(
          {
            path: call.path,
            method: 'POST',
            headers: call.headers,
            body: call.body,
            headersTimeout: request.stream ? this.timeouts.firstByteMs : this.timeouts.replyMs,
            bodyTimeout: this.timeouts.idleMs,
          },
          reply,
        );
      const prepared = this.prepare(kind, host, upstream.path, headers, JSON.stringify(upstream.body));
      if (!(prepared instanceof Promise)) dispatch(prepared);
      else
        prepared.then(
          (call) => {
            if (!reply.aborted) dispatch(call);
          },
          (error: unknown) => {
            if (!reply.aborted) subscriber.error(toHostError(error, true));
          },
        );
      return () => reply.abort();
    });
  }

  /**
   * A call ready to go: its origin, path, headers (with those of the host's authorizer, when its
   * kind has one: a promise then) and body.
   */
  private prepare(
    kind: HostKind,
    host: HostEndpoint,
    path: string,
    headers: Record<string, string>,
    body: string,
  ): PreparedCall | Promise<PreparedCall> {
    const base = this.base(host.baseUrl);
    const call = { origin: base.origin, path: base.path + path, headers, body };
    let authorizer = this.authorizers.get(host);
    if (authorizer === undefined) {
      authorizer = kind.authorizer?.(host) ?? null;
      this.authorizers.set(host, authorizer);
    }
    if (!authorizer) return call;
    return authorizer.headers({ method: 'POST', url: new URL(call.origin + call.path), headers, body }).then(
      (added) => ({ ...call, headers: { ...headers, ...added } }),
      (error: unknown) => Promise.reject(credentialFailure(error)),
    );
  }

  /**
   * One short call answered with JSON (a token count, embeddings): its parsed body. Fails with a
   * HostError as a call of the pipeline would (a status, no answer within the first-byte limit,
   * unreadable JSON). `signal` gives the call up (the caller, seeing it aborted, knows why it failed).
   */
  async callForJson(kind: HostKind, host: HostEndpoint, upstream: UpstreamRequest, signal?: AbortSignal): Promise<unknown> {
    let status: number;
    let body: string;
    let retryAfterMs: number | null = null;
    try {
      const call = await this.prepare(kind, host, upstream.path, upstream.headers, JSON.stringify(upstream.body));
      const response = await this.pool(call.origin).request({
        path: call.path,
        method: 'POST',
        headers: call.headers,
        body: call.body,
        headersTimeout: this.timeouts.firstByteMs,
        bodyTimeout: this.timeouts.idleMs,
        ...(signal === undefined ? {} : { signal }),
      });
      status = response.statusCode;
      if (status >= 400) retryAfterMs = retryAfterOf(response.headers);
      body = await response.body.text();
    } catch (error) {
      throw toHostError(error, true);
    }
    if (status >= 400)
      throw toHostError(new HostError('status', kind.errorMessage(status, body), status, true, retryAfterMs), true);
    try {
      return JSON.parse(body) as unknown;
    } catch {
      throw toHostError(
        new HostError('malformed', `upstream answered with a body that is not JSON: ${body.slice(0, 100)}`),
        true,
      );
    }
  }

  /**
   * Closes the pools with the application that owns them: gently, so that a call still running (a
   * stream its client has just left, being aborted) ends as the pipeline decides, not as a host
   * failure; destroyed after a bound.
   */
  async onApplicationShutdown(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(
      pools.map(async (pool) => {
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => (timer = setTimeout(resolve, POOL_CLOSE_MS, 'late')));
        const closed = await Promise.race([pool.close().then(() => 'closed' as const), late]);
        clearTimeout(timer);
        if (closed === 'late') await pool.destroy();
      }),
    );
  }
}

/** One upstream call as it goes out. */
interface PreparedCall {
  origin: string;
  path: string;
  headers: Record<string, string>;
  body: string;
}

/** A host whose credential could not be had (no token, no signature): worth trying the next host. */
function credentialFailure(error: unknown): HostError {
  const message = (error as Error)?.message ?? String(error);
  return new HostError('connection', `no credential for the host: ${maskSecrets(message)}`);
}

/** Server-sent events, the framing of every kind but those that say otherwise. */
export function sseFraming(): StreamFraming {
  const utf8 = new TextDecoder();
  let messages: SseMessage[] = [];
  const parser = createParser({ onEvent: (message) => messages.push({ event: message.event, data: message.data }) });
  return {
    feed(chunk) {
      parser.feed(utf8.decode(chunk, { stream: true }));
      const fed = messages;
      messages = [];
      return fed;
    },
  };
}

/** An error response's `Retry-After` (seconds or an HTTP-date), in ms from now; null when it gave none that reads. */
function retryAfterOf(headers: IncomingHttpHeaders): number | null {
  const value: string | string[] | undefined = headers['retry-after'];
  return parseRetryAfter(typeof value === 'string' ? value : value?.[0], Date.now());
}

/** Longest error body kept for the message: enough for any provider's JSON error. */
const ERROR_BODY_LIMIT = 64 * 1024;

const callerGone = () => new Error('the caller went away');

/**
 * One upstream response, read as undici delivers it (its dispatch handler: no body stream, no
 * promise per chunk), turned into canonical events for the subscriber.
 */
class HostReply implements Dispatcher.DispatchHandler {
  private controller: Dispatcher.DispatchController | null = null;
  /** The client went away (or a fallback moved on) before the reply was complete. */
  aborted = false;
  /** The subscriber has had its ending (completion or error): nothing more reaches it. */
  private finished = false;
  /** Whether any output has been passed on (an error then is not "before output"). */
  private produced = false;
  /**
   * The upstream's own messages before any output (a stream's start, pings): held until output
   * comes, so that a failure before it, retried on another host, leaves nothing of this one's
   * reply with the client.
   */
  private held: PassThrough[] = [];
  private status = 0;
  /** An error status's `Retry-After`, in ms from its arrival, when it gave one. */
  private retryAfterMs: number | null = null;
  /** The body of an error status or of a whole reply, as it arrives. */
  private chunks: Buffer[] = [];
  private size = 0;
  private stream: { decoder: StreamDecoder; framing: StreamFraming; pending: CanonicalEvent[] } | null = null;

  constructor(
    private readonly kind: HostKind,
    private readonly settings: HostSettings,
    private readonly hostModel: string,
    private readonly streamed: boolean,
    private readonly passThrough: boolean,
    private readonly subscriber: Subscriber<CanonicalEvent>,
  ) {}

  /** Aborting is for calls still running (a client gone, a fallback): a finished one has nothing to stop. */
  abort(): void {
    if (this.finished || this.aborted) return;
    this.aborted = true;
    this.controller?.abort(callerGone());
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    // Aborted while it waited for a connection: stop it now that it has one.
    if (this.aborted) controller.abort(callerGone());
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number, headers: IncomingHttpHeaders): void {
    if (statusCode < 200) return; // informational (1xx): the response proper follows
    this.status = statusCode;
    if (statusCode >= 400) {
      this.retryAfterMs = retryAfterOf(headers);
      return;
    }
    this.subscriber.next({ type: 'ready' });
    if (this.streamed) {
      const framing = this.kind.framing?.() ?? sseFraming();
      this.stream = { decoder: this.kind.decoder(this.passThrough, this.settings, this.hostModel), framing, pending: [] };
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.finished && this.stream) return; // the rest of a completed stream, read so the connection is kept
    if (!this.stream) {
      if (this.status >= 400 && this.size >= ERROR_BODY_LIMIT) return;
      this.chunks.push(chunk);
      this.size += chunk.length;
      return;
    }
    const { decoder, framing, pending } = this.stream;
    let unreadable: unknown = null;
    try {
      for (const message of framing.feed(chunk)) {
        if (decoder.done) break;
        for (const event of decoder.push(message)) pending.push(event);
      }
    } catch (error) {
      unreadable = error;
    }
    // What was decoded before a message that could not be is still the reply's.
    for (const event of pending) {
      if (!this.produced) {
        if (event.type === 'pass_through') {
          this.held.push(event);
          continue;
        }
        if (isOutput(event)) {
          this.produced = true;
          this.release();
        }
      }
      this.subscriber.next(event);
    }
    pending.length = 0;
    if (unreadable) {
      const error = unreadableReply(unreadable, !this.produced);
      this.fail(error);
      controller.abort(error);
      return;
    }
    if (decoder.done && !this.finished) {
      // The reply is complete: the client need not wait for the upstream to close its body.
      this.finished = true;
      this.release();
      this.subscriber.complete();
    }
  }

  onResponseEnd(): void {
    if (this.finished) return;
    if (this.status >= 400)
      return this.fail(
        new HostError('status', this.kind.errorMessage(this.status, this.body()), this.status, true, this.retryAfterMs),
      );
    if (this.stream)
      return this.fail(
        new HostError('connection', 'upstream ended its stream before completing the reply', null, !this.produced),
      );
    let events: CanonicalEvent[];
    try {
      events = this.kind.decodeReply(this.body(), this.passThrough, this.settings, this.hostModel);
    } catch (error) {
      return this.fail(unreadableReply(error, true));
    }
    this.finished = true;
    for (const event of events) this.subscriber.next(event);
    this.subscriber.complete();
  }

  onResponseError(_controller: Dispatcher.DispatchController | undefined, error: Error): void {
    if (this.aborted) return;
    this.fail(error);
  }

  /** Passes on the upstream messages held before output. */
  private release(): void {
    for (const message of this.held) this.subscriber.next(message);
    this.held = [];
  }

  /** The gathered body of an error status or a whole reply. */
  private body(): string {
    return Buffer.concat(this.chunks, this.size).toString('utf8');
  }

  private fail(error: unknown): void {
    if (this.finished) return;
    this.finished = true;
    this.subscriber.error(toHostError(error, !this.produced));
  }
}

/**
 * An exception while decoding an upstream's reply or stream is that reply's fault, whatever threw
 * (a decoder's HostError, or anything a shape it did not expect raised): the request's provider
 * error, never the process's.
 */
function unreadableReply(error: unknown, beforeOutput: boolean): HostError {
  if (error instanceof HostError) return error;
  const message = (error as Error)?.message ?? String(error);
  return new HostError('malformed', `upstream sent a reply that could not be read: ${message}`, null, beforeOutput);
}

/**
 * Every failure a call raises, as a HostError whose text holds no secret: an upstream's text may echo
 * a key (ours or the host's), and it goes on to logs, the ledger and the client.
 */
function toHostError(error: unknown, beforeOutput: boolean): HostError {
  if (error instanceof HostError)
    return new HostError(
      error.kind,
      maskSecrets(error.message),
      error.status,
      beforeOutput && error.beforeOutput,
      error.retryAfterMs,
    );
  if (error instanceof undiciErrors.HeadersTimeoutError || error instanceof undiciErrors.BodyTimeoutError) {
    return new HostError('timeout', 'upstream did not answer in time', null, beforeOutput);
  }
  const message = (error as Error)?.message ?? String(error);
  return new HostError('connection', `upstream connection failed: ${maskSecrets(message)}`, null, beforeOutput);
}
