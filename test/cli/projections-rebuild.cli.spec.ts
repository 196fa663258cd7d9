import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadConfig } from '../../src/config/config';
import { openRuntime } from '../../src/runtime/runtime';
import { operatorTool as cli, operatorToolJson as json } from '../support/operator-tool';
import { tempDir } from '../support/temp';

/**
 * `projections rebuild` with in-process read models rebuilds only the tool's own copy: refused while
 * an instance with in-process read models serves the data directory (it said it succeeded, did
 * nothing to the service, and wrote a snapshot the service then overwrote).
 */
describe('projections rebuild beside an in-process service', () => {
  const dir = tempDir('rebuild-beside');
  const env = { DATA_DIR: dir.path, REDIS_URL: '', SIMULATED_HOST_PORT: 'off' };
  const snapshot = join(dir.path, 'read-models.snapshot.json');
  afterAll(() => dir.cleanup());

  it('is refused while the service serves (exit 1, saying what to do, nothing written); runs once it has stopped', async () => {
    const { orgId } = await json(env, ['org', 'create', '--name', 'Rebuilt']);
    await json(env, ['credits', 'grant', '--org', orgId, '--amount', '2']);
    const saved = existsSync(snapshot) ? readFileSync(snapshot, 'utf8') : null;
    const service = await openRuntime(loadConfig(env), { serving: true });
    try {
      const run = await cli(env, ['projections', 'rebuild']);
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(
        /^model-gateway: not rebuilt: a gateway instance with in-process read models is serving from .*Stop the service, run `model-gateway projections rebuild`, then start it again \(a restart alone does not rebuild/,
      );
      expect(existsSync(snapshot) ? readFileSync(snapshot, 'utf8') : null).toBe(saved);
      // Other commands still run beside it.
      expect((await json(env, ['credits', 'show', '--org', orgId])).granted).toBe('2');
    } finally {
      await service.close();
    }
    const run = await cli(env, ['projections', 'rebuild']);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/rebuilt memory read models from 2 events/);
  });
});
