import { readdirSync } from 'node:fs';
import { loadConfig } from '../../src/config/config';
import { openRuntime } from '../../src/runtime/runtime';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, TEST_MODELS } from '../support/gateway';
import { createKey } from '../support/keys';
import { operatorToolJson } from '../support/operator-tool';
import { Child, eventually, startService } from '../support/processes';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { describeWithSmallDisk, mountSmallDisk, SmallDisk } from '../support/small-disk';
import { chatCompletion } from '../support/streams';

/**
 * The gateway as its own process with its DATA_DIR on a real disk of 4 MB that fills up: while the
 * log cannot take appends, every billed request is refused with a 503 (never a hang, never a 500) and
 * the instance says it is not ready, naming the log; once there is room again it is ready by itself,
 * with no request needed. SIGTERM on the full disk ends cleanly: the read models' snapshot is not
 * saved (it says so, and leaves no partial file), the log is closed, exit 0; started again on the
 * same data, the gateway serves and the audit is clean.
 */

const M = TEST_MODELS;
/** Long enough for any answer here; a request still open after it hangs. */
const NO_HANG_MS = 15_000;

describeWithSmallDisk('the gateway on a full disk', () => {
  let disk: SmallDisk;
  let fake: FakeUpstream;
  let t: TestRuntime;
  let env: Record<string, string>;
  let service: Child | null = null;
  let base: string;
  let secret: string;
  /** Requests answered 200: each one billed. */
  let billed = 0;

  const ready = () => fetch(`${base}/health/ready`, { signal: AbortSignal.timeout(NO_HANG_MS) });
  const ask = (stream = false) => chatCompletion(base, secret, { stream }, { signal: AbortSignal.timeout(NO_HANG_MS) });
  const askMessages = () =>
    fetch(`${base}/api/v1/messages`, {
      method: 'POST',
      signal: AbortSignal.timeout(NO_HANG_MS),
      headers: { 'content-type': 'application/json', 'x-api-key': secret, 'anthropic-version': '2023-06-01' },
      body: JSON.stringify({ model: M.claude.slug, max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }], stream: true }),
    });
  const partials = () => readdirSync(disk.path).filter((f) => f.endsWith('.partial'));
  const askBilled = async () => {
    expect((await ask()).status).toBe(200);
    billed += 1;
  };

  beforeAll(async () => {
    disk = mountSmallDisk('full-disk', 4);
    fake = await startFakeUpstream();
    t = await openTestRuntime({ env: { DATA_DIR: disk.path } });
    env = serviceEnv(t, fake);
    await t.runtime.close();
    const operator = await openRuntime(loadConfig(env));
    const orgId = await fundedOrganization(operator, 100_000_000_000);
    ({ secret } = await createKey(operator, orgId, 'full disk'));
    await operator.close();
    ({ service, base } = await startService(env));
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Room to write.' } });
    fake.on(M.claude.hostModel, { kind: 'reply', reply: { text: 'Room to write.' } });
  });
  afterAll(async () => {
    if (service) {
      service.process.kill('SIGKILL');
      await service.exited();
    }
    await fake?.close();
    disk?.free();
    await t?.cleanup();
    disk?.unmount();
  });

  it('refuses requests with 503 and is not ready (naming the log) while the disk is full; ready again by itself once there is room', async () => {
    await askBilled();
    disk.fill();

    // A whole reply: a 503. A stream: a 503, or, when its reservation still fitted and its
    // settlement did not, an in-stream 503 error in place of its end ([DONE]; a messages stream
    // passed whole from an anthropic host: the host's message_delta and message_stop). Never a
    // hang, never a 500.
    for (const stream of [false, true, false, true]) {
      const reply = await ask(stream);
      const body = await reply.text();
      if (reply.status === 503) expect(JSON.parse(body)).toMatchObject({ error: { code: 'unavailable' } });
      else {
        expect({ stream, status: reply.status }).toEqual({ stream: true, status: 200 });
        expect(body).toContain('"error":{"code":503');
        expect(body).not.toContain('[DONE]');
      }
      const passed = await askMessages();
      const events = await passed.text();
      if (passed.status === 503) expect(JSON.parse(events)).toMatchObject({ error: { type: 'overloaded_error' } });
      else {
        expect(passed.status).toBe(200);
        expect(events).toContain('event: error');
        expect(events).not.toContain('message_delta');
        expect(events).not.toContain('message_stop');
      }
    }
    // Each 503's request line says why, as a refusal's does: its outcome and what the client was told.
    const refusedLines = service!
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => l.msg === 'request' && l.status === 503 && String(l.path).startsWith('/api/'));
    expect(refusedLines.length).toBeGreaterThan(0);
    for (const line of refusedLines) {
      expect(line).toMatchObject({
        level: 50,
        outcome: 'unavailable',
        error: expect.stringMatching(/event log|could not be recorded/),
      });
    }
    const unready = await ready();
    expect(unready.status).toBe(503);
    const { reasons } = (await unready.json()) as { reasons: string[] };
    expect(reasons).toEqual(['event log: it takes no appends (database or disk is full)']);
    expect((await fetch(`${base}/health/live`)).status).toBe(200);

    // Room again: readiness finds out by itself (a load balancer sends no request to an unready instance).
    disk.free();
    await eventually(async () => (await ready()).status === 200, 10_000, 100);
    expect(await (await ready()).json()).toEqual({ ready: true, reasons: [] });
    await askBilled();
  }, 60_000);

  it('stops cleanly on SIGTERM with the disk full: the snapshot not saved (said), no partial file, the log closed, exit 0; restarted, it serves and the audit is clean', async () => {
    // A request billed since the last save: stopping has read models to save.
    await askBilled();
    disk.fill();
    expect((await ask()).status).toBe(503);

    service!.process.kill('SIGTERM');
    const code = await service!.exited();
    const output = service!.output();
    service = null;
    expect(output).not.toMatch(/ENOSPC.*\n\s+at /);
    expect(code).toBe(0);
    expect(output).toMatch(/read models not saved \(.*ENOSPC.*\): the next start replays the log/);
    expect(output).toContain('model gateway stopped (event log closed)');
    expect(partials()).toEqual([]);

    disk.free();
    ({ service, base } = await startService(env));
    await askBilled();
    const audit = await operatorToolJson(env, ['ledger', 'audit']);
    expect(audit).toMatchObject({ clean: true, differences: [] });
    // Every request answered 200 was billed, none of those refused.
    expect(audit.settlements).toBe(billed);
    // The restarted gateway replayed what its last save lacked: it shows every charge.
    const credits = await fetch(`${base}/api/v1/credits`, { headers: { authorization: `Bearer ${secret}` } });
    expect(((await credits.json()) as { data: { total_usage: number } }).data.total_usage).toBeCloseTo(
      Number(audit.totals.spent),
      9,
    );
  }, 60_000);
});
