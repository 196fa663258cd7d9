import { replyIdOf, requestIdsOf } from '../../src/surfaces/reply-id';

describe("a translated reply's id", () => {
  it('is made from its request id under its surface’s prefix, and leads back to it', () => {
    expect(replyIdOf('chatcmpl-', 'req_abc')).toBe('chatcmpl-abc');
    expect(replyIdOf('msg_', 'client-id-7')).toBe('msg_client-id-7');
    expect(requestIdsOf('chatcmpl-abc')).toEqual(['req_abc', 'abc']);
    expect(requestIdsOf('msg_client-id-7')).toEqual(['req_client-id-7', 'client-id-7']);
    expect(requestIdsOf('resp_x')).toEqual(['req_x', 'x']);
  });

  it('leads nowhere without a surface’s prefix, or with nothing after it', () => {
    expect(requestIdsOf('req_abc')).toEqual([]);
    expect(requestIdsOf('chatcmpl-')).toEqual([]);
    expect(requestIdsOf('anything')).toEqual([]);
  });
});
