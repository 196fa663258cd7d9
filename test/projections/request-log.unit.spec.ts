import type { RequestLogEntry } from '../../src/projections/read-models';
import { RequestLog } from '../../src/projections/request-log';

const entry = (requestId: string, time: number): RequestLogEntry => ({
  requestId,
  reservationId: null,
  time,
  surface: 'messages',
  model: 'm',
  host: null,
  keyId: 'k',
  inputTokens: 0,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  outputTokens: 0,
  cost: 0,
  latencyMs: 1,
  status: 'ok',
});

describe('an organization’s request log in this process', () => {
  it('keeps the newest entries up to its retention, newest first', () => {
    const log = new RequestLog(3);
    for (let i = 1; i <= 5; i++) log.push(entry(`q${i}`, i));
    expect(log.newest(10).map((e) => e.requestId)).toEqual(['q5', 'q4', 'q3']);
    expect(log.newest(2).map((e) => e.requestId)).toEqual(['q5', 'q4']);
    expect(log.oldestFirst().map((e) => e.requestId)).toEqual(['q3', 'q4', 'q5']);
    // The first lookup finds what the ring kept, and only that.
    expect(log.find('q2')).toBeNull();
    expect(log.find('q3')).toMatchObject({ time: 3 });
  });

  it('finds an entry by its request id while it is kept, and not once it is dropped', () => {
    const log = new RequestLog(2);
    log.push(entry('q1', 1));
    log.push(entry('q2', 2));
    expect(log.find('q1')).toMatchObject({ time: 1 });
    log.push(entry('q3', 3));
    expect(log.find('q1')).toBeNull();
    expect(log.find('q3')).toMatchObject({ time: 3 });
    expect(log.find('unknown')).toBeNull();
  });

  it('finds the newest of two entries with one id, and keeps finding it when the older is dropped', () => {
    const log = new RequestLog(2);
    log.push(entry('same', 1));
    log.push(entry('same', 2));
    expect(log.find('same')).toMatchObject({ time: 2 });
    log.push(entry('other', 3));
    expect(log.find('same')).toMatchObject({ time: 2 });
    log.push(entry('other', 4));
    expect(log.find('same')).toBeNull();
  });

  it("finds an entry by its host's id for the reply too, and forgets both ids when it is dropped", () => {
    const log = new RequestLog(2);
    log.push({ ...entry('q1', 1), upstreamId: 'msg_1' });
    log.push(entry('q2', 2));
    expect(log.find('msg_1')).toMatchObject({ requestId: 'q1' });
    log.push({ ...entry('q3', 3), upstreamId: 'chatcmpl-3' });
    expect(log.find('msg_1')).toBeNull();
    expect(log.find('q1')).toBeNull();
    expect(log.find('chatcmpl-3')).toMatchObject({ requestId: 'q3' });
  });
});
