// A minimal Server-Sent Events parser (the WHATWG rules we need: event/data fields, comments,
// any line ending, events split across chunks). EventSource cannot POST, so we parse ourselves.

export interface SseMessage {
  event: string;
  data: string;
}

export class SseParser {
  private buffer = '';
  private eventType = '';
  private data: string[] = [];

  /** Feeds decoded text; returns the messages completed by it. */
  push(chunk: string): SseMessage[] {
    this.buffer += chunk;
    const out: SseMessage[] = [];
    // A trailing '\r' may be the first half of '\r\n': keep it until the next chunk decides.
    const end = this.buffer.endsWith('\r') ? this.buffer.length - 1 : this.buffer.length;
    const re = /\r\n|\r|\n/g;
    let start = 0;
    let match: RegExpExecArray | null;
    while ((match = re.exec(this.buffer)) !== null && match.index < end) {
      this.line(this.buffer.slice(start, match.index), out);
      start = match.index + match[0].length;
    }
    this.buffer = this.buffer.slice(start);
    return out;
  }

  private line(line: string, out: SseMessage[]): void {
    if (line === '') {
      if (this.data.length > 0) out.push({ event: this.eventType || 'message', data: this.data.join('\n') });
      this.eventType = '';
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return; // keep-alive comment
    const colon = line.indexOf(':');
    const name = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (name === 'event') this.eventType = value;
    else if (name === 'data') this.data.push(value);
  }
}

/** Reads an SSE response body, calling `onMessage` per message; stops early when it returns true. */
export async function readSse(
  body: ReadableStream<Uint8Array>,
  onMessage: (message: SseMessage) => boolean | void,
): Promise<void> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseParser();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      for (const message of parser.push(decoder.decode(value, { stream: true }))) {
        if (onMessage(message)) return;
      }
    }
  } finally {
    reader.cancel().catch(() => undefined);
  }
}
