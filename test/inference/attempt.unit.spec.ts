import { CanonicalEvent, HostError } from '../../src/canonical/canonical';
import {
  ABORT,
  ABORT_READING_ON,
  AttemptInput,
  attemptStep,
  DEADLINE,
  HOST_COMPLETE,
  hostFailed,
  initialAttempt,
  SHUTDOWN,
} from '../../src/inference/attempt';
import { usage } from '../support/usage';

const ready: CanonicalEvent = { type: 'ready' };
const text = (t: string): CanonicalEvent => ({ type: 'text', text: t });
const unavailable = new HostError('status', 'overloaded', 503);
const badRequest = new HostError('status', 'bad request', 400);

/** given an attempt over `hosts` hosts that has seen `history`, when `input`, then the action and the state. */
function given(hosts: number, ...history: AttemptInput[]) {
  const state = initialAttempt(hosts);
  for (const input of history) attemptStep(state, input);
  return { state, when: (input: AttemptInput) => ({ action: attemptStep(state, input), state }) };
}

describe('the attempt', () => {
  it('starts on the first host, with nothing delivered and no ending', () => {
    expect(initialAttempt(3)).toEqual({
      hostIndex: 0,
      hostCount: 3,
      retries: [],
      retried: 0,
      switched: 0,
      retryDelayMs: 0,
      failure: null,
      ready: false,
      produced: false,
      deliveredChars: 0,
      clientGone: false,
      usage: null,
      upstreamId: null,
      ending: null,
    });
  });

  describe('host events', () => {
    it('forwards the first ready, and skips a fallback host ready', () => {
      expect(given(2).when(ready).action).toBe('forward');
      expect(given(2, ready, hostFailed(unavailable)).when(ready).action).toBe('skip');
    });

    it('counts the characters of text and tool calls, which count as output', () => {
      const { action, state } = given(1, ready, text('Hello')).when({
        type: 'tool_call',
        index: 0,
        id: 'call_1',
        name: 'lookup',
        argumentsDelta: '{"q":1}',
      });
      expect(action).toBe('forward');
      expect(state).toMatchObject({ produced: true, deliveredChars: 5 + 6 + 7 });
    });

    it('keeps the usage the host reports, and forwards it and the finish', () => {
      const counted = usage({ inputTokens: 7, cacheReadTokens: 3, outputTokens: 2 });
      const { action, state } = given(1, ready, text('Hi')).when({ type: 'usage', usage: counted });
      expect(action).toBe('forward');
      expect(state.usage).toBe(counted);
      expect(given(1, ready).when({ type: 'finish', reason: 'stop' }).action).toBe('forward');
    });

    it("keeps the host's latest count: a later usage replaces an earlier one", () => {
      const start = usage({ inputTokens: 7, cacheReadTokens: 3, outputTokens: 1 });
      const end = usage({ inputTokens: 7, cacheReadTokens: 3, outputTokens: 40 });
      const { state } = given(1, ready, { type: 'usage', usage: start }, text('Hi')).when({ type: 'usage', usage: end });
      expect(state.usage).toBe(end);
    });

    it('updates the one state the shell owns (no copy per streamed token)', () => {
      const { state, when } = given(1, ready);
      expect(when(text('a')).state).toBe(state);
    });
  });

  describe('a host failure', () => {
    it('before any output, retryable, with a host left: moves on to the next host', () => {
      const { action, state } = given(3, ready).when(hostFailed(unavailable));
      expect(action).toBe('next_host');
      expect(state).toMatchObject({ hostIndex: 1, ending: null });
    });

    it("before any output, after counting its input: moves on, and the next host's usage is not that count", () => {
      const counted = { type: 'usage' as const, usage: usage({ inputTokens: 7, cacheWriteTokens: 9 }) };
      const { action, state } = given(2, ready, counted).when(hostFailed(unavailable));
      expect(action).toBe('next_host');
      expect(state.usage).toBeNull();
    });

    it('on the last host: ends the request failed', () => {
      const { action, state } = given(2, hostFailed(unavailable)).when(hostFailed(unavailable));
      expect(action).toBe('end');
      expect(state).toMatchObject({ hostIndex: 1, ending: { kind: 'failed', error: unavailable } });
    });

    it('after output: ends the request (what was delivered cannot be taken back)', () => {
      const { action, state } = given(2, ready, text('partial')).when(hostFailed(unavailable));
      expect(action).toBe('end');
      expect(state).toMatchObject({ hostIndex: 0, ending: { kind: 'failed', error: unavailable } });
    });

    it('that is not retryable (the request itself was refused): ends the request', () => {
      const { action, state } = given(2).when(hostFailed(badRequest));
      expect(action).toBe('end');
      expect(state.ending).toEqual({ kind: 'failed', error: badRequest });
    });
  });

  describe('the other endings', () => {
    it.each([
      ['the host completing', HOST_COMPLETE, 'complete'],
      ['the deadline', DEADLINE, 'timeout'],
      ['the client leaving', ABORT, 'abort'],
      ["the shutdown's grace period ending", SHUTDOWN, 'shutdown'],
    ])('%s ends the request (%s)', (_name, signal, kind) => {
      const { action, state } = given(2, ready, text('Hi')).when(signal);
      expect(action).toBe('end');
      expect(state.ending).toEqual({ kind });
    });
  });

  describe('exactly one ending', () => {
    it.each([
      ['a late event', text('late')],
      ['a late failure', hostFailed(unavailable)],
      ['the deadline', DEADLINE],
      ['the client leaving', ABORT],
      ["the shutdown's grace period ending", SHUTDOWN],
      ['another completion', HOST_COMPLETE],
    ])('given an ended request, %s is ignored', (_name, input) => {
      const { action, state } = given(2, ready, text('Hi'), HOST_COMPLETE).when(input);
      expect(action).toBe('ignore');
      expect(state).toMatchObject({ ending: { kind: 'complete' }, deliveredChars: 2, hostIndex: 0 });
    });
  });
});

describe('the attempt, given a client that left while its host is read on (a reasoning model)', () => {
  const counted = usage({ inputTokens: 50, outputTokens: 2040, reasoningTokens: 2000 });
  const readOn = () => given(2, ready, text('Hi'), ABORT_READING_ON);

  it('goes on without ending: the host is read, nothing is forwarded', () => {
    const { action, state } = given(2, ready, text('Hi')).when(ABORT_READING_ON);
    expect(action).toBe('read_on');
    expect(state).toMatchObject({ ending: null, clientGone: true });
    const after = readOn();
    expect(after.when(text('more')).action).toBe('skip');
    expect(after.when({ type: 'usage', usage: counted }).action).toBe('skip');
    expect(after.state).toMatchObject({ deliveredChars: 6, usage: counted });
  });

  it("ends on the host's completion as the client's leaving, read to its end (the host's count bills it)", () => {
    const { action, state } = readOn().when(HOST_COMPLETE);
    expect(action).toBe('end');
    expect(state.ending).toEqual({ kind: 'abort', readToEnd: true });
  });

  it.each([
    ['the host failing', hostFailed(unavailable)],
    ['the deadline', DEADLINE],
    ["the shutdown's grace period ending", SHUTDOWN],
  ])('%s ends it as the client leaving, billed for what was delivered (no retry: nobody to serve)', (_name, input) => {
    const { action, state } = readOn().when(input);
    expect(action).toBe('end');
    expect(state.ending).toEqual({ kind: 'abort' });
  });

  it.each([ABORT, ABORT_READING_ON])('being told again that the client left changes nothing (%j)', (input) => {
    const { action, state } = readOn().when(input);
    expect(action).toBe('ignore');
    expect(state).toMatchObject({ ending: null, clientGone: true });
  });

  it('before any output as well: a host still thinking is read on', () => {
    const { action, state } = given(2, ready).when(ABORT_READING_ON);
    expect(action).toBe('read_on');
    expect(state.produced).toBe(false);
  });
});

describe('the attempt, given hosts that retry', () => {
  const twice = { attempts: 2, baseMs: 100, maxMs: 1000 };
  const refused = new HostError('connection', 'connection refused');
  const open = new HostError('circuit_open', 'host a is failing; not called for now');

  it('calls a host again after its transient failure, with a backoff drawn under the ceiling, until its retries are spent', () => {
    const attempt = initialAttempt(2, [twice, twice]);
    expect(attemptStep(attempt, hostFailed(unavailable, 10_000, 0.5))).toBe('retry_host');
    expect(attempt).toMatchObject({ hostIndex: 0, retried: 1, retryDelayMs: 50 });
    expect(attemptStep(attempt, hostFailed(unavailable, 10_000, 0.5))).toBe('retry_host');
    expect(attempt).toMatchObject({ hostIndex: 0, retried: 2, retryDelayMs: 100 });
    expect(attemptStep(attempt, hostFailed(unavailable, 10_000, 0.5))).toBe('next_host');
    expect(attempt).toMatchObject({ hostIndex: 1, retried: 0 });
    expect(attemptStep(attempt, hostFailed(refused, 10_000, 0.5))).toBe('retry_host');
  });

  it("waits the host's Retry-After, and leaves a host asking for longer than its cap for the next", () => {
    const soon = new HostError('status', 'rate limited', 429, true, 300);
    const late = new HostError('status', 'rate limited', 429, true, 5_000);
    const attempt = initialAttempt(2, [twice, twice]);
    expect(attemptStep(attempt, hostFailed(soon, 10_000, 0.99))).toBe('retry_host');
    expect(attempt.retryDelayMs).toBe(300);
    expect(attemptStep(attempt, hostFailed(late, 10_000, 0))).toBe('next_host');
  });

  it('moves on rather than wait past the deadline', () => {
    const attempt = initialAttempt(2, [twice, twice]);
    expect(attemptStep(attempt, hostFailed(new HostError('status', 'busy', 429, true, 300), 200, 0))).toBe('next_host');
  });

  it('does not retry what would fail the same again, nor after output', () => {
    expect(given(2).when(hostFailed(badRequest)).action).toBe('end');
    const forbidden = initialAttempt(2, [twice, twice]);
    expect(attemptStep(forbidden, hostFailed(new HostError('status', 'forbidden', 403), 10_000, 0))).toBe('next_host');
    const streaming = initialAttempt(2, [twice, twice]);
    attemptStep(streaming, text('partial'));
    expect(attemptStep(streaming, hostFailed(unavailable, 10_000, 0))).toBe('end');
  });

  it('passes over a host whose circuit is open without retrying it, and ends with the last real failure', () => {
    const attempt = initialAttempt(3, [twice, twice, twice]);
    expect(attemptStep(attempt, hostFailed(open, 10_000, 0))).toBe('next_host');
    expect(attemptStep(attempt, hostFailed(unavailable, 0, 0))).toBe('next_host');
    expect(attemptStep(attempt, hostFailed(open, 10_000, 0))).toBe('end');
    expect(attempt.ending).toEqual({ kind: 'failed', error: unavailable });
  });

  it('calls the host again at once with another credential of its pool, spending none of its retries, then retries it as before', () => {
    const limited = new HostError('status', 'rate limited', 429, true, 300);
    const attempt = initialAttempt(2, [twice, twice]);
    expect(attemptStep(attempt, hostFailed(limited, 10_000, 0, true))).toBe('other_credential');
    expect(attempt).toMatchObject({ hostIndex: 0, retried: 0, switched: 1, retryDelayMs: 0 });
    expect(attemptStep(attempt, hostFailed(limited, 10_000, 0, false))).toBe('retry_host');
    expect(attempt).toMatchObject({ hostIndex: 0, retried: 1, switched: 1 });
    attemptStep(attempt, hostFailed(limited, 10_000, 0));
    expect(attemptStep(attempt, hostFailed(limited, 10_000, 0))).toBe('next_host');
    expect(attempt).toMatchObject({ hostIndex: 1, retried: 0, switched: 0 });
  });

  it('every circuit open: ends with the open circuit', () => {
    const attempt = initialAttempt(2, [twice, twice]);
    attemptStep(attempt, hostFailed(open));
    attemptStep(attempt, hostFailed(open));
    expect(attempt.ending).toEqual({ kind: 'failed', error: open });
  });
});

describe("the attempt, given a host's id for its reply", () => {
  it('keeps it unforwarded, and forgets a failed host’s when the next serves', () => {
    const attempt = initialAttempt(2);
    expect(attemptStep(attempt, { type: 'upstream_id', id: 'msg_first' })).toBe('skip');
    expect(attempt.upstreamId).toBe('msg_first');
    expect(attemptStep(attempt, hostFailed(new HostError('status', 'overloaded', 529)))).toBe('next_host');
    expect(attempt.upstreamId).toBeNull();
    attemptStep(attempt, { type: 'upstream_id', id: 'msg_second' });
    expect(attempt.upstreamId).toBe('msg_second');
  });
});
