import { mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { removeStaleSideFiles, STALE_SIDE_FILE_MS, writeAside } from '../../src/projections/snapshot-file';
import { tempDir } from '../support/temp';

/**
 * A saved state's file on a real directory: written aside and renamed, each write with its own side
 * file; the side files of saves never finished (their writer killed) removed once stale, and only those.
 */

const dir = tempDir('snapshot-file');
afterAll(() => dir.cleanup());

let made = 0;
const fresh = () => {
  const path = join(dir.path, `case-${++made}`);
  mkdirSync(path);
  return path;
};
const aged = (path: string, ms: number) => {
  const when = (Date.now() - ms) / 1000;
  utimesSync(path, when, when);
};

describe('writeAside', () => {
  it('writes the pieces as one file, creating its directory, and leaves no side file', async () => {
    const file = join(fresh(), 'nested', 'state.json');
    await writeAside(file, ['{"a":', '1}']);
    await writeAside(file, ['{"a":', '2}']);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ a: 2 });
    expect(readdirSync(join(file, '..'))).toEqual(['state.json']);
  });

  it('a write that fails throws, removes its side file and leaves the last save', async () => {
    const path = fresh();
    const file = join(path, 'state.json');
    await writeAside(file, ['{"a":1}']);
    // A directory where the side file's rename must land cannot be replaced by a file.
    const blocked = join(path, 'blocked.json');
    mkdirSync(join(blocked, 'inside'), { recursive: true });
    await expect(writeAside(blocked, ['{}'])).rejects.toThrow(/EISDIR|ENOTEMPTY|EEXIST/);
    expect(readdirSync(path).sort()).toEqual(['blocked.json', 'state.json']);
    expect(readFileSync(file, 'utf8')).toBe('{"a":1}');
  });
});

describe('removeStaleSideFiles', () => {
  it("removes the file's side files older than a save can take, says which, and keeps the rest", async () => {
    const path = fresh();
    const file = join(path, 'state.json');
    writeFileSync(file, '{}');
    const names = {
      stale: 'state.json.1f0c.partial',
      alsoStale: 'state.json.4242.partial',
      writing: 'state.json.9b2e.partial',
      otherFiles: 'other.json.77aa.partial',
      notASideFile: 'state.json.bak',
    };
    for (const name of Object.values(names)) writeFileSync(join(path, name), 'x');
    for (const name of [names.stale, names.alsoStale, names.otherFiles, names.notASideFile]) {
      aged(join(path, name), STALE_SIDE_FILE_MS + 60_000);
    }
    aged(join(path, names.writing), STALE_SIDE_FILE_MS - 60_000);

    const lines: string[] = [];
    const removed = await removeStaleSideFiles(file, (line) => lines.push(line));

    expect(removed.sort()).toEqual([names.stale, names.alsoStale].sort());
    expect(readdirSync(path).sort()).toEqual([
      'other.json.77aa.partial',
      'state.json',
      'state.json.9b2e.partial',
      'state.json.bak',
    ]);
    expect(lines).toEqual([
      expect.stringMatching(
        /state\.json: removed 2 side file\(s\) of saves never finished \(state\.json\..+\.partial, state\.json\..+\.partial\)$/,
      ),
    ]);
  });

  it('says nothing when there is nothing to remove, nor when the directory does not exist yet', async () => {
    const lines: string[] = [];
    const path = fresh();
    writeFileSync(join(path, 'state.json.0001.partial'), 'x');
    expect(await removeStaleSideFiles(join(path, 'state.json'), (line) => lines.push(line))).toEqual([]);
    expect(await removeStaleSideFiles(join(path, 'absent', 'state.json'), (line) => lines.push(line))).toEqual([]);
    expect(lines).toEqual([]);
  });
});
