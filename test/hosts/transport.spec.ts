import { firstValueFrom, Observable, toArray } from 'rxjs';
import { CanonicalEvent, CanonicalRequest, HostError } from '../../src/canonical/canonical';
import type { HostKind } from '../../src/hosts/host-kind';
import { openAiHost } from '../../src/hosts/openai/openai.host';
import { HostTransport } from '../../src/hosts/transport';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';

/**
 * Whatever a decoder throws while reading an upstream's reply (a HostError, or anything a shape it
 * did not expect raised) is that call's HostError: `malformed`, with whatever was decoded before it
 * delivered first; never an exception that escapes the call.
 */

/** The openai kind, with a decoder that throws a TypeError on the stream's second chunk and on any whole reply. */
const brittle: HostKind = {
  ...openAiHost,
  decoder: () => {
    const inner = openAiHost.decoder();
    let chunks = 0;
    return {
      get done() {
        return inner.done;
      },
      push(message) {
        chunks += 1;
        if (chunks === 3) throw new TypeError("Cannot read properties of null (reading 'index')");
        return inner.push(message);
      },
    };
  },
  decodeReply: () => {
    throw new TypeError('boom');
  },
};

const request = (stream: boolean): CanonicalRequest => ({
  system: [],
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  stop: [],
  stream,
  maxTokens: 100,
});

/** The error a call ended with (null: it completed). */
async function failure(events: Observable<CanonicalEvent>): Promise<unknown> {
  try {
    await firstValueFrom(events.pipe(toArray()));
    return null;
  } catch (error) {
    return error;
  }
}

describe('the transport, given a decoder that throws', () => {
  let fake: FakeUpstream;
  let transport: HostTransport;
  beforeAll(async () => {
    fake = await startFakeUpstream();
    transport = new HostTransport({ firstByteMs: 5_000, replyMs: 5_000, idleMs: 5_000 });
  });
  afterAll(async () => {
    await transport.onApplicationShutdown();
    await fake.close();
  });

  const call = (stream: boolean) => {
    const seen: CanonicalEvent[] = [];
    const events = new Observable<CanonicalEvent>((subscriber) =>
      transport
        .call(brittle, { id: 'brittle', baseUrl: `${fake.url}/v1`, apiKey: null, settings: {} }, 'brittle-model', request(stream))
        .subscribe({
          next: (e) => (seen.push(e), subscriber.next(e)),
          error: (e) => subscriber.error(e),
          complete: () => subscriber.complete(),
        }),
    );
    return { seen, events };
  };

  it('mid-stream: the text decoded before it, then a malformed HostError after output', async () => {
    fake.on('brittle-model', { kind: 'reply', reply: { text: 'one two three' }, pieces: 3 });
    const { seen, events } = call(true);
    const error = await failure(events);
    expect(seen.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text)).toEqual(['one ']);
    expect(error).toBeInstanceOf(HostError);
    expect(error).toMatchObject({ kind: 'malformed', beforeOutput: false });
    expect((error as HostError).message).toMatch(/could not be read: Cannot read properties of null/);
  });

  it('a whole reply: a malformed HostError before output (not a broken connection)', async () => {
    fake.on('brittle-model', { kind: 'reply', reply: { text: 'whole' } });
    const { seen, events } = call(false);
    const error = await failure(events);
    expect(seen).toEqual([{ type: 'ready' }]);
    expect(error).toMatchObject({ kind: 'malformed', beforeOutput: true, message: expect.stringMatching(/boom/) });
  });
});

describe('the transport, given a kind with its own credential and framing', () => {
  let fake: FakeUpstream;
  let transport: HostTransport;
  beforeAll(async () => {
    fake = await startFakeUpstream();
    transport = new HostTransport({ firstByteMs: 5_000, replyMs: 5_000, idleMs: 5_000 });
  });
  afterAll(async () => {
    await transport.onApplicationShutdown();
    await fake.close();
  });

  const host = () => ({ id: 'signed', baseUrl: `${fake.url}/v1`, apiKey: null, settings: { region: 'eu' } });

  it('adds the authorizer’s headers, computed over the call as it goes out, and makes one authorizer per host', async () => {
    const made: string[] = [];
    const signing: HostKind = {
      ...openAiHost,
      authorizer: (h) => {
        made.push(`${h.id}:${h.settings.region}`);
        return { headers: async (call) => ({ authorization: `Signed ${call.url.pathname} ${call.body.length}` }) };
      },
    };
    const endpoint = host();
    for (const stream of [false, true])
      await firstValueFrom(transport.call(signing, endpoint, 'signed-model', request(stream)).pipe(toArray()));
    const sent = fake.requests.filter((r) => r.body?.model === 'signed-model');
    expect(sent).toHaveLength(2);
    for (const r of sent) expect(r.headers.authorization).toBe(`Signed /v1/chat/completions ${Buffer.byteLength(r.raw)}`);
    expect(made).toEqual(['signed:eu']);
  });

  it('a credential that cannot be had: a connection HostError before output, worth the next host, its secret masked', async () => {
    const failing: HostKind = {
      ...openAiHost,
      authorizer: () => ({
        headers: () => Promise.reject(new Error('token endpoint refused sk-live-0123456789abcdefghijklmnop')),
      }),
    };
    const error = await failure(transport.call(failing, host(), 'unsigned-model', request(true)));
    expect(error).toMatchObject({ kind: 'connection', beforeOutput: true, retryable: true });
    expect((error as HostError).message).toMatch(/^no credential for the host: token endpoint refused/);
    expect((error as HostError).message).not.toMatch(/0123456789abcdefghijklmnop/);
    expect(fake.requests.some((r) => r.body?.model === 'unsigned-model')).toBe(false);
  });

  it('reads a stream through the kind’s framing instead of server-sent events', async () => {
    const frames: number[] = [];
    const framed: HostKind = {
      ...openAiHost,
      // The SSE text cut at blank lines by hand: the transport must hand the kind's messages to its decoder.
      framing: () => {
        let buffered = '';
        return {
          feed(chunk) {
            frames.push(chunk.length);
            buffered += Buffer.from(chunk).toString('utf8');
            const blocks = buffered.split('\n\n');
            buffered = blocks.pop()!;
            return blocks.map((block) => ({ data: block.replace(/^data: /, '') }));
          },
        };
      },
    };
    fake.on('framed-model', { kind: 'reply', reply: { text: 'one two' } });
    const events = await firstValueFrom(
      transport.call(framed, { ...host(), id: 'framed' }, 'framed-model', request(true)).pipe(toArray()),
    );
    expect(frames.length).toBeGreaterThan(0);
    expect(
      events
        .filter((e) => e.type === 'text')
        .map((e) => (e as { text: string }).text)
        .join(''),
    ).toBe('one two');
  });
});
