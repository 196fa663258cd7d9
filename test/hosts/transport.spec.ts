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
      transport.call(brittle, { baseUrl: `${fake.url}/v1`, apiKey: null }, 'brittle-model', request(stream)).subscribe({
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
