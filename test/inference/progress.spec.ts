import type { RecordedEvent } from '../../src/eventstore/event-store';
import type { ReservationProgress, ReservationSettled } from '../../src/ledger/ledger.events';
import { auditThenClose, startGateway, TEST_MODELS, TestGateway } from '../support/gateway';
import { eventually } from '../support/processes';

/**
 * A stream records what it has delivered at intervals (ReservationProgress), on its reservation's
 * stream, and still settles once as usual when it ends: completed, or cut by its client. Replies
 * answered whole record none. A settlement the log refuses leaves the expiry to bill the last
 * progress. Read models in Redis (when the tests have one), the audit at the end.
 */

const M = TEST_MODELS;
const INTERVAL_MS = 100;
// 24 words, one every 25 ms: 600 ms of text, about six intervals.
const TEXT = Array.from({ length: 24 }, (_, i) => `word${String(i).padStart(2, '0')} `).join('');

let g: TestGateway;

beforeAll(async () => {
  g = await startGateway({ redis: true, env: { PROGRESS_INTERVAL_MS: String(INTERVAL_MS) } });
});
afterAll(() => auditThenClose(g));

async function eventsOf(requestId: string): Promise<RecordedEvent[]> {
  const events = await g.t.runtime.events.readAll(0, 100_000);
  return events.filter((e) => (e.data as { requestId?: string }).requestId === requestId);
}

const post = (path: string, body: object, headers: Record<string, string>, signal?: AbortSignal) =>
  fetch(`${g.baseUrl}/api/v1/${path}`, {
    method: 'POST',
    signal,
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const ask = [{ role: 'user', content: 'Count' }];
const chat = (stream: boolean, signal?: AbortSignal) =>
  post('chat/completions', { model: M.gpt.slug, messages: ask, stream }, { authorization: `Bearer ${g.key}` }, signal);
const messages = (stream: boolean) =>
  post(
    'messages',
    { model: M.claude.slug, max_tokens: 200, messages: ask, stream },
    { 'x-api-key': g.key, 'anthropic-version': '2023-06-01' },
  );

describe("a stream's progress", () => {
  it.each([
    ['chat-completions on an openai host', M.gpt.hostModel, () => chat(true)],
    ['messages passed whole from an anthropic host', M.claude.hostModel, () => messages(true)],
  ])('%s: recorded while it delivers, growing, then settled once as usual', async (_name, hostModel, send) => {
    g.fake.on(hostModel, { kind: 'reply', reply: { text: TEXT, usage: { input: 12, output: 30 } }, chunkDelayMs: 25 });
    const res = await send();
    const requestId = res.headers.get('x-request-id')!;
    expect(await res.text()).toContain('word23');
    await g.settled();
    const events = await eventsOf(requestId);
    const types = events.map((e) => e.type);
    expect(types[0]).toBe('CreditsReserved');
    expect(types[types.length - 1]).toBe('ReservationSettled');
    const progress = events.filter((e) => e.type === 'ReservationProgress').map((e) => e.data as ReservationProgress['data']);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    expect(types.slice(1, -1).every((t) => t === 'ReservationProgress')).toBe(true);
    // Each record holds at least what the last did, and something new: more characters, or the host's
    // count having moved between two of the interval's ticks (a passed-whole host reports usage as it
    // goes, so on a loaded machine a tick can fall between its usage and its next text). Never more
    // than was sent.
    for (let i = 1; i < progress.length; i++) {
      expect(progress[i].deliveredChars).toBeGreaterThanOrEqual(progress[i - 1].deliveredChars);
      const { recordedAt: _now, ...now } = progress[i];
      const { recordedAt: _before, ...before } = progress[i - 1];
      expect(now).not.toEqual(before);
    }
    expect(progress[progress.length - 1].deliveredChars).toBeLessThanOrEqual(TEXT.length);
    const settled = events[events.length - 1].data as ReservationSettled['data'];
    expect(settled).toMatchObject({ status: 'ok', inputTokens: 12, outputTokens: 30 });
    expect(settled.interrupted).toBeUndefined();
  });

  it('a stream cut by its client after progress: settled for what it delivered, once', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: TEXT }, chunkDelayMs: 25 });
    const leave = new AbortController();
    const res = await chat(true, leave.signal);
    const requestId = res.headers.get('x-request-id')!;
    await eventually(async () => (await eventsOf(requestId)).some((e) => e.type === 'ReservationProgress'), 15_000);
    leave.abort();
    await res.text().catch(() => undefined);
    await g.settled();
    const events = await eventsOf(requestId);
    const settled = events.filter((e) => e.type === 'ReservationSettled');
    expect(settled).toHaveLength(1);
    expect(settled[0].data).toMatchObject({ status: 'client_abort' });
  });

  it('a reply answered whole records none', async () => {
    g.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: TEXT }, firstByteDelayMs: 4 * INTERVAL_MS });
    const res = await chat(false);
    expect(res.status).toBe(200);
    await res.json();
    await g.settled();
    const types = (await eventsOf(res.headers.get('x-request-id')!)).map((e) => e.type);
    expect(types).toEqual(['CreditsReserved', 'ReservationSettled']);
  });
});

describe('a stream whose settlement the log refuses, after progress', () => {
  let refusing: TestGateway;
  let refuse = false;

  beforeAll(async () => {
    // Short reservations, swept often: the hold left by the refused settlement expires within the test.
    refusing = await startGateway({
      sweep: true,
      env: {
        PROGRESS_INTERVAL_MS: String(INTERVAL_MS),
        REQUEST_TIMEOUT_MS: '2000',
        RESERVATION_TTL_MS: '2500',
        SWEEP_INTERVAL_MS: '50',
      },
    });
    const events = refusing.t.runtime.events;
    const append = events.append.bind(events);
    events.append = (stream, batch, expected) =>
      refuse && batch.some((e) => e.type === 'ReservationSettled' && (e.data as { status: string }).status !== 'interrupted')
        ? Promise.reject(new Error('SQLITE_FULL: database or disk is full'))
        : append(stream, batch, expected);
  });
  afterAll(() => auditThenClose(refusing));

  it('is withdrawn (an in-stream error, no end), and its expiry bills what its last progress recorded', async () => {
    refusing.fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: TEXT }, chunkDelayMs: 25 });
    refuse = true;
    const res = await fetch(`${refusing.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${refusing.key}` },
      body: JSON.stringify({ model: M.gpt.slug, messages: ask, stream: true }),
    });
    const requestId = res.headers.get('x-request-id')!;
    const body = await res.text();
    expect(body).toContain('could not be recorded');
    expect(body).not.toContain('[DONE]');
    refuse = false;
    await refusing.settled();
    const events = (await refusing.t.runtime.events.readAll(0, 100_000)).filter(
      (e) => (e.data as { requestId?: string }).requestId === requestId,
    );
    const progress = events.filter((e) => e.type === 'ReservationProgress').map((e) => e.data as ReservationProgress['data']);
    expect(progress.length).toBeGreaterThanOrEqual(2);
    const last = progress[progress.length - 1];
    expect(events[events.length - 1].data).toMatchObject({
      status: 'interrupted',
      outputTokens: last.outputTokens,
      interrupted: { progressAt: last.recordedAt, deliveredChars: last.deliveredChars },
    });
  });
});
