import type { FastifyReply } from 'fastify';
import type { Observable, Subscription } from 'rxjs';
import { ApiError, tellError, toApiError } from '../http/api-error';
import type { PipelineEvent } from '../inference/inference.command';

/** How a surface writes its stream: SSE text per event, at the end, and for a late failure. */
export interface StreamSerializer {
  /**
   * Text that opens the stream (e.g. a first chunk): written ahead of the first text after the
   * headers, so it can say what the events before that told (the host's first usage count).
   */
  open(): string;
  event(event: PipelineEvent): string;
  close(): string;
  /** The in-stream error for a failure after the stream started. */
  error(error: ApiError): string;
}

export interface SseOptions {
  keepAliveMs: number;
  /** Answers a failure that happens before anything was sent, in the surface's error format. */
  failBeforeStart: (error: ApiError) => void;
  /** Headers known only once the host is called, read when the headers go out. */
  lateHeaders?: () => Record<string, string>;
}

/** Streams whose headers have gone out and that have not ended, in this process (for the metrics). */
let open = 0;
export const openStreams = (): number => open;

/**
 * Serializes a pipeline stream as server-sent events. Headers go out when the upstream accepts
 * (or after one keep-alive interval, whichever is first) so that a host failing at once still
 * gets a proper status; then a comment line every `keepAliveMs` of silence keeps proxies from
 * cutting slow first tokens. A client that goes away unsubscribes, which aborts the upstream.
 */
export function streamSse(
  reply: FastifyReply,
  events: Observable<PipelineEvent>,
  serializer: StreamSerializer,
  options: SseOptions,
): Promise<void> {
  return new Promise((resolve) => {
    const raw = reply.raw;
    let started = false;
    let finished = false;
    let subscription: Subscription | null = null;
    let timer: NodeJS.Timeout | null = null;

    // Events decoded from one upstream read arrive in one go: they leave in one write.
    let buffered = '';
    let opened = false;
    const flush = () => {
      if (buffered && !raw.destroyed) raw.write(buffered);
      buffered = '';
    };
    const append = (text: string) => {
      if (buffered === '') process.nextTick(flush);
      buffered += text;
    };
    const write = (text: string) => {
      if (!text) return;
      if (!opened) {
        opened = true;
        text = serializer.open() + text;
      }
      append(text);
    };
    const end = () => {
      flush();
      raw.end();
    };
    const armKeepAlive = () => {
      if (timer) {
        timer.refresh();
        return;
      }
      timer = setTimeout(() => {
        start();
        // A comment, not the stream's opening: what opens it depends on the events to come.
        append(': keep-alive\n\n');
        timer = null;
        armKeepAlive();
      }, options.keepAliveMs);
    };
    const start = () => {
      if (started) return;
      started = true;
      open++;
      reply.hijack();
      raw.writeHead(200, {
        ...(reply.getHeaders() as Record<string, string>),
        ...options.lateHeaders?.(),
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        connection: 'keep-alive',
        'x-accel-buffering': 'no',
      });
    };
    const finish = () => {
      finished = true;
      if (started) open--;
      if (timer) clearTimeout(timer);
      raw.off('close', onClose);
      resolve();
    };
    const onClose = () => {
      if (!finished) {
        subscription?.unsubscribe();
        finish();
      }
    };
    raw.on('close', onClose);
    armKeepAlive();

    subscription = events.subscribe({
      next: (event) => {
        if (event.type === 'ready') {
          start();
          return;
        }
        start();
        write(serializer.event(event));
        armKeepAlive();
      },
      error: (error: unknown) => {
        const apiError = toApiError(error);
        tellError(reply.request, apiError);
        if (!started) {
          finish();
          options.failBeforeStart(apiError);
          return;
        }
        write(serializer.error(apiError));
        end();
        finish();
      },
      complete: () => {
        start();
        write(serializer.close());
        end();
        finish();
      },
    });
    // A client that left while the request was admitted fired its 'close' before anyone listened.
    if (raw.destroyed) onClose();
  });
}

/** One SSE message with a JSON payload. */
export const sseData = (payload: unknown, event?: string): string =>
  `${event ? `event: ${event}\n` : ''}data: ${JSON.stringify(payload)}\n\n`;
