import { runInNewContext } from 'node:vm';
import { failureText } from '../../src/projections/store-errors';

describe('a store failure as the operator’s log says it', () => {
  it('names Redis for the socket’s own error node-redis rejects commands in flight with, from any realm', () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' });
    expect(failureText(reset)).toBe('Redis: read ECONNRESET');
    // As a test runner's sandbox sees an error Node made: not an instance of its Error.
    const foreign = runInNewContext(`Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' })`) as unknown;
    expect(foreign instanceof Error).toBe(false);
    expect(failureText(foreign)).toBe('Redis: read ECONNRESET');
  });

  it('leaves other failures as they are', () => {
    expect(failureText(new Error('disk I/O error'))).toBe('disk I/O error');
    expect(failureText('plain')).toBe('plain');
  });
});
