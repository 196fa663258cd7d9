import { chmodSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { operatorTool as cli, operatorToolJson as json } from '../support/operator-tool';
import { tempDir } from '../support/temp';

/**
 * `ledger export --output FILE` writes an organization's ledger (charges, keys, amounts): the file is
 * the owner's only (0600), as a backup is, whatever the umask — made so, or tightened when it exists.
 */
describe('operator tool: a ledger export is owner-only', () => {
  const dir = tempDir('cli-export-mode');
  const env = { DATA_DIR: dir.path, REDIS_URL: '' };
  let orgId: string;
  let umask: number;
  beforeAll(async () => {
    ({ orgId } = await json(env, ['org', 'create', '--name', 'Exported']));
    await json(env, ['credits', 'grant', '--org', orgId, '--amount', '2.5', '--grant-id', 'invoice-1']);
    // The tool inherits this process's umask: none at all, so that only the tool's own mode can make it 0600.
    umask = process.umask(0);
  });
  afterAll(() => {
    process.umask(umask);
    dir.cleanup();
  });

  const exported = (file: string) => cli(env, ['ledger', 'export', '--org', orgId, '--output', file]);

  it('a new file: 0600, holding the export', async () => {
    const file = join(dir.path, 'new.ndjson');
    expect(await exported(file)).toMatchObject({ code: 0 });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, 'utf8')).toContain('"CreditsGranted"');
  });

  it('an existing file readable by all: tightened to 0600, its old content replaced', async () => {
    const file = join(dir.path, 'existing.ndjson');
    writeFileSync(file, 'x'.repeat(100_000));
    chmodSync(file, 0o666);
    expect(await exported(file)).toMatchObject({ code: 0 });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const text = readFileSync(file, 'utf8');
    expect(text).not.toMatch(/x{100}/);
    // The same export as the new file's (but the time it was made), and nothing after it.
    const lines = (t: string) => t.split('\n').map((line) => line.replace(/"exportedAt":\d+/, ''));
    expect(lines(text)).toEqual(lines(readFileSync(join(dir.path, 'new.ndjson'), 'utf8')));
  });
});
