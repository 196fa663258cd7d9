import { join } from 'node:path';
import { freePort } from '../support/own-redis';
import { ROOT, startNode } from '../support/processes';
import { tempDir } from '../support/temp';

const PASSWORD = 'n0t-for-the-logs';

describe('Redis unreachable at start', () => {
  const dir = tempDir('redis-unreachable');
  afterAll(() => dir.cleanup());

  const start = async (extra: Record<string, string>) => {
    const port = await freePort();
    const service = startNode(join(ROOT, 'dist/src/main.js'), [], {
      DATA_DIR: dir.path,
      PORT: '0',
      SIMULATED_HOST_PORT: 'off',
      REDIS_URL: `redis://gateway:${PASSWORD}@127.0.0.1:${port}`,
      REDIS_CONNECT_TIMEOUT_MS: '500',
      ...extra,
    });
    return { service, port, code: await service.exited() };
  };

  it('logs the failed attempts and gives up after REDIS_CONNECT_TIMEOUT_MS: exit 1, one line naming Redis, no password', async () => {
    const { service, port, code } = await start({});
    expect(code).toBe(1);
    const out = service.output();
    expect(out).not.toContain(PASSWORD);
    expect(out).toContain(`cannot reach Redis at redis://gateway:***@127.0.0.1:${port}`);
    expect(out).toMatch(
      new RegExp(
        `^model gateway failed to start: Redis at redis://gateway:\\*\\*\\*@127\\.0\\.0\\.1:${port} could not be reached within 500 ms \\(.*ECONNREFUSED.*\\): check REDIS_URL`,
        'm',
      ),
    );
  });

  it('stops a WORKERS set (exit 1) when its workers cannot reach Redis', async () => {
    const { service, code } = await start({ WORKERS: '2' });
    expect(code).toBe(1);
    expect(service.output()).not.toContain(PASSWORD);
    expect(service.output()).toMatch(/failed to start \(exit code 1\): stopping/);
    expect(service.output()).toMatch(/could not be reached within 500 ms/);
  });
});
