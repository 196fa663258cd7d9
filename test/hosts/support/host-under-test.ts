import type { ReservationSettled } from '../../../src/ledger/ledger.events';
import type { FakeReply } from '../../support/fake-upstream';
import type { Asked, Got, Surface } from '../../support/surfaces';
import type { throughGateway } from '../../support/through-gateway';

/**
 * The host of a host kind's spec, serving one of the spec's models on the fake: what it answers and
 * was sent, and the failures every kind's host is put through from every surface (a status before
 * any output falls back to the model's next host; a stream cut, or failed, after output is billed
 * for what was delivered; usage past belief is not believed). Each failure is the body of one test
 * (`it(title, host.cutsItsStream(surface))`), given what differs from kind to kind: the statuses, the
 * charge, the host's own wire.
 */

/** What the host answers, unless a test says otherwise. */
export const TEXT = 'Sunny in Paris today.';
/** The reasoning it gives before a call. */
export const THINKING = 'The user wants the weather.';

/** A model of the spec's, and the host model it is served as. */
interface Served {
  slug: string;
  hostModel: string;
}

/** What a client got from a surface: the response, its body, and what the client read of it. */
interface Answer {
  res: Response;
  text: string;
  out: Got;
}

/** What a cut stream left: its body, what the client read of it, and the settlement. */
interface Cut {
  text: string;
  out: Got;
  settled: ReservationSettled['data'];
}

export function hostUnderTest(
  through: ReturnType<typeof throughGateway>,
  kind: {
    /** The model the host serves. */
    model: Served;
    /** A model whose first host (`firstHostModel`) fails before output; this host serves it next. */
    fallback?: Served & { firstHostModel: string };
    /** How the spec reads a surface's reply: Surface.read, unless it checks more on every read. */
    read?: (surface: Surface<string>, text: string, stream: boolean) => Got;
    /** What the spec's requests ask for (see Asked) besides what a test asks: nothing, unless given. */
    asked?: Asked;
  },
) {
  const { settlementOf, sent } = through;
  const fake = () => through.gateway().fake;
  const read = kind.read ?? ((surface: Surface<string>, text: string, stream: boolean) => surface.read(text, stream));

  /** The surface's own request for `slug` (asking `asked` besides what the spec asks), answered 200. */
  async function called(surface: Surface<string>, slug: string, stream: boolean, asked: Asked = {}) {
    const answer = await through.call(surface, slug, stream, { ...kind.asked, ...asked });
    expect(answer.res.status).toBe(200);
    return answer;
  }

  /** The same, and what the client read of the answer. */
  async function answered(surface: Surface<string>, slug: string, stream: boolean, asked: Asked = {}): Promise<Answer> {
    const answer = await called(surface, slug, stream, asked);
    return { ...answer, out: read(surface, answer.text, stream) };
  }

  return {
    /** The host answering `reply` to a surface's own request for the model: the answer (200), and the request the host was sent. */
    answers: async (surface: Surface<string>, stream: boolean, reply: FakeReply, asked: Asked = {}) => {
      fake().on(kind.model.hostModel, { kind: 'reply', reply });
      const answer = await answered(surface, kind.model.slug, stream, asked);
      return { ...answer, upstream: sent(kind.model.hostModel) };
    },

    /**
     * For each status in turn, the model's first host answering it before any output: the client gets
     * this host's text, and the request is settled as `billed` says (this host's charge for its 1,000
     * input and 1,000 output tokens).
     */
    failsBeforeOutput:
      (surface: Surface<string>, stream: boolean, statuses: number[], billed: Record<string, unknown>) => async () => {
        const { firstHostModel, hostModel, slug } = kind.fallback!;
        for (const status of statuses) {
          fake().on(firstHostModel, { kind: 'status', status });
          fake().on(hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 1000, output: 1000 } } });
          const { res, out } = await answered(surface, slug, stream);
          expect(out.text).toBe(TEXT);
          expect(await settlementOf(res)).toMatchObject(billed);
        }
      },

    /**
     * The host cuts its stream after three words of six, having reported no usage (none at all where
     * `usage` is null): the client gets the three words, and the request is billed for them as the
     * gateway counts them, 4 characters a token. `then` checks what the kind's spec checks besides.
     */
    cutsItsStream:
      (surface: Surface<string>, options: { usage?: null; then?: (cut: Cut) => void } = {}) =>
      async () => {
        const reply: FakeReply = { text: 'one two three four five six', ...(options.usage === null ? { usage: null } : {}) };
        fake().on(kind.model.hostModel, { kind: 'cut', reply, afterPieces: 3 });
        const { res, text } = await called(surface, kind.model.slug, true);
        expect(text).toContain('three');
        const settled = await settlementOf(res);
        expect(settled.outputTokens).toBe(Math.ceil('one two three'.length / 4));
        expect(settled.amount).toBeGreaterThan(0);
        options.then?.({ text, out: read(surface, text, true), settled });
      },

    /** The host's stream reports an error after two pieces of output: the client's stream ends in an error, what was delivered billed. */
    failsAfterOutput: (surface: Surface<string>) => async () => {
      fake().on(kind.model.hostModel, { kind: 'stream_error', afterPieces: 2 });
      const { res, text } = await called(surface, kind.model.slug, true);
      expect(text).toMatch(/error/);
      const settled = await settlementOf(res);
      expect(settled.outputTokens).toBeGreaterThan(0);
      expect(settled.amount).toBeGreaterThan(0);
    },

    /**
     * The host reports, in its own wire (`wireUsage`), 12 input tokens and 10^12 output tokens, far
     * past the model's cap: the output is not believed, the text delivered is counted instead (4
     * characters a token); the input is. Whole, and streamed too where `streams` says so.
     */
    reportsAbsurdUsage:
      (surface: Surface<string>, wireUsage: string, streams = [false]) =>
      async () => {
        fake().on(kind.model.hostModel, { kind: 'reply', reply: { text: TEXT, wireUsage } });
        for (const stream of streams) {
          const { res } = await called(surface, kind.model.slug, stream);
          const settled = await settlementOf(res);
          expect(settled.outputTokens).toBe(Math.ceil(TEXT.length / 4));
          expect(settled.inputTokens).toBe(12);
        }
      },
  };
}
