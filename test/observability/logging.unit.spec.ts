import { loadConfig } from '../../src/config/config';
import pino from 'pino';
import { loggerOptions, scrubSecrets } from '../../src/observability/logging';
import { levelOf, lineLevelOf, requestLine } from '../../src/observability/request-facts';

describe('log lines, decided', () => {
  it("answers pino's flush on standard output: the service exits only once it has", () => {
    const { stream, ...options } = loggerOptions({ level: 'info', pretty: false });
    const logger = pino(options, stream as pino.DestinationStream);
    const done = jest.fn();
    logger.flush(done);
    expect(done).toHaveBeenCalledTimes(1);
  });

  it('replaces every key secret in a text, and leaves other text alone', () => {
    const key = `sk-svc-${'aB3_-'.repeat(9)}`;
    expect(scrubSecrets(`bad key ${key} and ${key}.`)).toBe('bad key sk-svc-[redacted] and sk-svc-[redacted].');
    const plain = 'nothing secret here';
    expect(scrubSecrets(plain)).toBe(plain);
  });

  it('logs a served request at info, a refusal at warn, our or the provider failure at error', () => {
    expect([200, 204, 301, 400, 402, 404, 499, 500, 502, 504].map(levelOf)).toEqual([
      'info',
      'info',
      'info',
      'warn',
      'warn',
      'warn',
      'warn',
      'error',
      'error',
      'error',
    ]);
  });

  it('logs a health probe or a metrics scrape answered 2xx at debug, any other answer to it as any request', () => {
    for (const path of ['/health', '/health/live', '/health/ready', '/metrics']) {
      expect([200, 204, 404, 503].map((status) => lineLevelOf(path, status))).toEqual(['debug', 'debug', 'warn', 'error']);
    }
    // Not a probe: a path that only begins like one, another route, the API.
    for (const path of ['/health/ready/x', '/healthz', '/metrics/x', '/api/v1/models', '/api/v1/chat/completions']) {
      expect(lineLevelOf(path, 200)).toBe('info');
    }
  });

  it("a request's line: the path without its query, tokens by class and the cost in credits", () => {
    const line = requestLine('POST', '/api/v1/chat/completions?x=1', 200, 12.3456, {
      surface: 'chat-completions',
      orgId: 'o',
      keyId: 'k',
      model: 'm/x',
      host: 'h',
      outcome: 'ok',
      usage: { inputTokens: 10, cacheReadTokens: 5, cacheWriteTokens: 2, cacheWrite1hTokens: 1, outputTokens: 7 },
      cost: 1_500_000_001,
      ttftMs: 4,
    });
    expect(line).toEqual({
      method: 'POST',
      path: '/api/v1/chat/completions',
      status: 200,
      latencyMs: 12.35,
      surface: 'chat-completions',
      orgId: 'o',
      keyId: 'k',
      model: 'm/x',
      host: 'h',
      outcome: 'ok',
      inputTokens: 18,
      cachedTokens: 5,
      cacheWriteTokens: 3,
      outputTokens: 7,
      costNanoCredits: 1_500_000_001,
      cost: 1.500000001,
      ttftMs: 4,
      fallback: false,
    });
    expect(requestLine('GET', '/health', 200, 1, null)).toEqual({ method: 'GET', path: '/health', status: 200, latencyMs: 1 });
  });

  it("a request's line names what was left out of the call: hosted tools, and betas (masked: the client's header named them)", () => {
    const key = `sk-svc-${'aB3_-'.repeat(9)}`;
    const line = requestLine('POST', '/api/v1/messages', 200, 1, {
      omittedTools: ['web_search'],
      omittedBetas: ['context-1m-2025-08-07', `context-1m-${key}`],
    });
    expect(line).toMatchObject({ omittedTools: ['web_search'], omittedBetas: ['context-1m-2025-08-07', 'context-1m-sk-svc-…'] });
    expect(requestLine('POST', '/api/v1/messages', 200, 1, {})).not.toHaveProperty('omittedBetas');
  });

  it('LOG_LEVEL and LOG_PRETTY are checked at start', () => {
    expect(loadConfig({}).logLevel).toBe('info');
    expect(loadConfig({ LOG_LEVEL: 'DEBUG' }).logLevel).toBe('debug');
    expect(() => loadConfig({ LOG_LEVEL: 'loud' })).toThrow(
      'configuration: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent, got "loud"',
    );
    expect(loadConfig({}).logPretty).toBe(false);
    expect(loadConfig({ LOG_PRETTY: '1' }).logPretty).toBe(true);
    expect(() => loadConfig({ LOG_PRETTY: 'maybe' })).toThrow('LOG_PRETTY must be on or off');
  });
});
