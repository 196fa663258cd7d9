import { copyFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createApp } from '../../src/app';
import { loadConfig } from '../../src/config/config';
import { hashKeySecret } from '../../src/identity/secrets';
import { SqliteEventStore } from '../../src/eventstore/sqlite-event-store';
import { RedisProjectionStore } from '../../src/projections/redis-projection-store';
import { openRuntime, Runtime } from '../../src/runtime/runtime';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { OperatorAudit, TEST_MODELS, testCatalogue } from '../support/gateway';
import { createKey } from '../support/keys';
import { operatorTool } from '../support/operator-tool';
import { eventually } from '../support/processes';
import { describeWithRedis, testRedisUrl, uniquePrefix } from '../support/redis';
import { fundedOrganization } from '../support/runtime';
import { tempDir } from '../support/temp';
import { linesTo } from '../../src/runtime-log/runtime-log';

/**
 * Read models that are not the log's: a Redis (or a saved in-process copy) holding the read models
 * of an earlier log, or of a later state of the same log than a backup restored. The gateway runs
 * in this process on real SQLite and Redis; the operator tool in its own, as an operator runs it.
 */

interface Gateway {
  url: string;
  runtime: Runtime;
  /** What the runtime logged while opening (the projector's reasons for rebuilding). */
  lines: string[];
  close(): Promise<void>;
}

let fake: FakeUpstream;
beforeAll(async () => {
  fake = await startFakeUpstream();
  fake.on(TEST_MODELS.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
});
afterAll(() => fake.close());

async function serve(env: Record<string, string>): Promise<Gateway> {
  const lines: string[] = [];
  const runtime = await openRuntime(loadConfig(env), { log: linesTo((line) => lines.push(line)) });
  const app: NestFastifyApplication = await createApp(runtime, { logger: false, catalogue: testCatalogue(fake) });
  await app.listen(0, '127.0.0.1');
  return {
    url: `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`,
    runtime,
    lines,
    close: async () => {
      await app.close();
      await runtime.close();
    },
  };
}

const chat = (g: Gateway, key: string) =>
  fetch(`${g.url}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${key}` },
    body: JSON.stringify({ model: TEST_MODELS.gpt.slug, messages: [{ role: 'user', content: 'Hi' }] }),
  });

/** Each request's status, one after the other. */
async function chats(g: Gateway, key: string, count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) {
    const res = await chat(g, key);
    await res.arrayBuffer();
    statuses.push(res.status);
  }
  return statuses;
}

/** An organization with credit and a key on `g`'s log: its id and the key's secret. */
async function customer(g: Gateway): Promise<{ orgId: string; key: string }> {
  const orgId = await fundedOrganization(g.runtime, 10_000_000_000);
  const { secret } = await createKey(g.runtime, orgId, 'trust');
  await g.runtime.projector.catchUp();
  return { orgId, key: secret };
}

async function operatorAudit(env: Record<string, string>): Promise<{ code: number | null; report: OperatorAudit }> {
  const run = await operatorTool(env, ['--json', 'ledger', 'audit']);
  try {
    return { code: run.code, report: JSON.parse(run.stdout) as OperatorAudit };
  } catch {
    throw new Error(`ledger audit printed no report (exit ${run.code}): ${run.stdout}${run.stderr}`);
  }
}

/** The three SQLite files of a log. */
const LOG_FILES = ['events.sqlite', 'events.sqlite-wal', 'events.sqlite-shm'];

describeWithRedis('read models in Redis of another log', () => {
  it('on a fresh log beside a Redis holding an earlier log: rebuilt, saying why; its keys work, its spends apply, audits are clean', async () => {
    const prefix = uniquePrefix('another-log');
    const [dirA, dirB] = [tempDir('log-a'), tempDir('log-b')];
    const envOf = (dir: string) => ({ DATA_DIR: dir, REDIS_URL: testRedisUrl()!, REDIS_PREFIX: prefix, LOG_POLL_MS: '20' });
    let b: Gateway | null = null;
    try {
      // Log A: an organization, a key, spends. Its read models stay in Redis after it stops.
      const a = await serve(envOf(dirA.path));
      const first = await customer(a);
      expect(await chats(a, first.key, 5)).toEqual([200, 200, 200, 200, 200]);
      await a.runtime.projector.catchUp();
      const checkpointA = await a.runtime.projections.checkpoint();
      await a.close();

      // The operator tool on log B (empty: made, no event yet) beside them: it does not audit A's read models as B's.
      await new SqliteEventStore(join(dirB.path, 'events.sqlite')).close();
      const before = await operatorAudit(envOf(dirB.path));
      expect(before.report.differences).toEqual([]);
      expect(before.code).toBe(0);

      b = await serve(envOf(dirB.path));
      const logB = await b.runtime.events.logId();
      expect(b.lines.filter((line) => line.includes('rebuilding'))).toEqual([]); // the tool rebuilt them already
      expect(await b.runtime.projections.ledgers()).toEqual(new Map());
      expect(await b.runtime.projections.origin()).toMatchObject({ logId: logB });

      const second = await customer(b);
      expect(await chats(b, second.key, 5)).toEqual([200, 200, 200, 200, 200]);
      // Log A's key is not of log B.
      expect(await chats(b, first.key, 1)).toEqual([401]);
      await b.runtime.projector.catchUp();
      const balance = await b.runtime.projections.balance(second.orgId);
      expect(balance.spent).toBeGreaterThan(0);
      const credits = (await (
        await fetch(`${b.url}/api/v1/credits`, { headers: { authorization: `Bearer ${second.key}` } })
      ).json()) as { data: { total_usage: number } };
      expect(credits.data.total_usage * 1e9).toBeCloseTo(balance.spent, 0);
      expect(checkpointA).toBeGreaterThan(0);

      const after = await operatorAudit(envOf(dirB.path));
      expect(after.report.differences).toEqual([]);
      expect(after.report.settlements).toBe(5);
      expect(after.code).toBe(0);
    } finally {
      await b?.runtime.projections.reset();
      await b?.close();
      dirA.cleanup();
      dirB.cleanup();
    }
  });

  it('started itself on a fresh log beside them: says they are of another log and rebuilds before answering', async () => {
    const prefix = uniquePrefix('another-log-start');
    const [dirA, dirB] = [tempDir('log-a'), tempDir('log-b')];
    const envOf = (dir: string) => ({ DATA_DIR: dir, REDIS_URL: testRedisUrl()!, REDIS_PREFIX: prefix, LOG_POLL_MS: '20' });
    let b: Gateway | null = null;
    try {
      const a = await serve(envOf(dirA.path));
      const first = await customer(a);
      expect(await chats(a, first.key, 3)).toEqual([200, 200, 200]);
      const logA = await a.runtime.events.logId();
      await a.close();

      b = await serve(envOf(dirB.path));
      const logB = await b.runtime.events.logId();
      expect(b.lines[0]).toBe(`projector: the read models are of another log (${logA}; this log is ${logB}): rebuilding`);
      const second = await customer(b);
      expect(await chats(b, second.key, 3)).toEqual([200, 200, 200]);
      await b.runtime.projector.catchUp();
      expect((await b.runtime.projections.balance(second.orgId)).spent).toBeGreaterThan(0);
      const audit = await operatorAudit(envOf(dirB.path));
      expect(audit.report.differences).toEqual([]);
      expect(audit.code).toBe(0);
    } finally {
      await b?.runtime.projections.reset();
      await b?.close();
      dirA.cleanup();
      dirB.cleanup();
    }
  });

  it('while serving, read models found to be of another log (Redis reached again, holding others) answer 503, then are rebuilt by themselves', async () => {
    const dir = tempDir('swapped');
    const prefix = uniquePrefix('swapped');
    const env = { DATA_DIR: dir.path, REDIS_URL: testRedisUrl()!, REDIS_PREFIX: prefix, LOG_POLL_MS: '20' };
    const g = await serve(env);
    try {
      const { key } = await customer(g);
      expect(await chats(g, key, 1)).toEqual([200]);
      const logId = await g.runtime.events.logId();
      // As if the Redis reached now held the read models of another log (a key of this log is not in them).
      const store = g.runtime.projections as RedisProjectionStore;
      await store.client.set(`${prefix}log`, 'another-log');
      await store.client.del(`${prefix}key:${hashKeySecret(key)}`);
      const statuses: number[] = [];
      await eventually(async () => {
        const [status] = await chats(g, key, 1);
        statuses.push(status);
        return status === 200;
      });
      expect(statuses.filter((s) => s !== 200 && s !== 503)).toEqual([]);
      expect(g.lines).toContain(`projector: the read models are of another log (another-log; this log is ${logId}): rebuilding`);
      await g.runtime.projector.catchUp();
      const audit = await operatorAudit(env);
      expect(audit.report.differences).toEqual([]);
    } finally {
      await g.runtime.projections.reset();
      await g.close();
      dir.cleanup();
    }
  });

  it('on a log restored from a backup older than their checkpoint: rebuilt, saying why; balances are those of the restored log, new events apply', async () => {
    const dir = tempDir('restored');
    const env = { DATA_DIR: dir.path, REDIS_URL: testRedisUrl()!, REDIS_PREFIX: uniquePrefix('restored'), LOG_POLL_MS: '20' };
    let g: Gateway | null = null;
    try {
      g = await serve(env);
      const { orgId, key } = await customer(g);
      expect(await chats(g, key, 1)).toEqual([200]);
      await g.runtime.projector.catchUp();
      const atBackup = await g.runtime.projections.balance(orgId);
      await g.close();
      g = null;
      copyFileSync(join(dir.path, 'events.sqlite'), join(dir.path, 'backup.sqlite'));

      // Served on after the backup: the read models in Redis move past it.
      g = await serve(env);
      expect(await chats(g, key, 4)).toEqual([200, 200, 200, 200]);
      await g.runtime.projector.catchUp();
      const checkpoint = await g.runtime.projections.checkpoint();
      expect((await g.runtime.projections.balance(orgId)).spent).toBeGreaterThan(atBackup.spent);
      await g.close();
      g = null;

      // The operator restores the backup.
      for (const f of LOG_FILES) rmSync(join(dir.path, f), { force: true });
      copyFileSync(join(dir.path, 'backup.sqlite'), join(dir.path, 'events.sqlite'));
      g = await serve(env);
      const head = await g.runtime.events.headPosition();
      expect(head).toBeLessThan(checkpoint);
      expect(g.lines[0]).toBe(`projector: checkpoint ${checkpoint} is past the log's head ${head}: rebuilding`);
      expect(await g.runtime.projections.balance(orgId)).toEqual(atBackup);

      // What follows the restore is applied, and the audit agrees.
      expect(await chats(g, key, 2)).toEqual([200, 200]);
      await g.runtime.projector.catchUp();
      expect((await g.runtime.projections.balance(orgId)).spent).toBeGreaterThan(atBackup.spent);
      const audit = await operatorAudit(env);
      expect(audit.report.differences).toEqual([]);
      expect(audit.report.settlements).toBe(3);
      expect(audit.code).toBe(0);
    } finally {
      await g?.runtime.projections.reset();
      await g?.close();
      dir.cleanup();
    }
  });
});

describe('in-process read models saved beside a log restored from an older backup', () => {
  it('rebuilt, saying why; balances are those of the restored log, new events apply', async () => {
    const dir = tempDir('restored-in-process');
    const env = { DATA_DIR: dir.path, REDIS_URL: '', LOG_POLL_MS: '20' };
    let g: Gateway | null = null;
    try {
      g = await serve(env);
      const { orgId, key } = await customer(g);
      expect(await chats(g, key, 1)).toEqual([200]);
      await g.runtime.projector.catchUp();
      const atBackup = await g.runtime.projections.balance(orgId);
      await g.close();
      g = null;
      copyFileSync(join(dir.path, 'events.sqlite'), join(dir.path, 'backup.sqlite'));

      g = await serve(env);
      expect(await chats(g, key, 4)).toEqual([200, 200, 200, 200]);
      await g.runtime.projector.catchUp();
      const checkpoint = await g.runtime.projections.checkpoint();
      // Closing saves the read models with their checkpoint.
      await g.close();
      g = null;

      for (const f of LOG_FILES) rmSync(join(dir.path, f), { force: true });
      copyFileSync(join(dir.path, 'backup.sqlite'), join(dir.path, 'events.sqlite'));
      g = await serve(env);
      const head = await g.runtime.events.headPosition();
      expect(g.lines[0]).toBe(`projector: checkpoint ${checkpoint} is past the log's head ${head}: rebuilding`);
      expect(await g.runtime.projections.balance(orgId)).toEqual(atBackup);
      expect(await chats(g, key, 2)).toEqual([200, 200]);
      await g.runtime.projector.catchUp();
      expect((await g.runtime.projections.balance(orgId)).spent).toBeGreaterThan(atBackup.spent);
      await g.close();
      g = null;

      const audit = await operatorAudit(env);
      expect(audit.report.differences).toEqual([]);
      expect(audit.report.settlements).toBe(3);
      expect(audit.code).toBe(0);
    } finally {
      await g?.close();
      dir.cleanup();
    }
  });
});
