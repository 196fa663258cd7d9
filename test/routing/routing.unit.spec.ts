import { MemoryBreakerStore } from '../../src/routing/breaker-store';
import { HostHealth } from '../../src/routing/health';
import { HostRouting } from '../../src/routing/routing';

const settings = { failures: 2, cooldownMs: 1_000 };
const sample = { firstByteMs: 10, outputTokens: 5, generationMs: 100 };

/** A routing shell on an in-process store, its clock and its log lines in the test's hands. */
function routing(failures = settings.failures) {
  const lines: string[] = [];
  const clock = { now: 10_000 };
  const store = new MemoryBreakerStore();
  const shell = new HostRouting(
    store,
    { ...settings, failures },
    new HostHealth(),
    (l) => lines.push(l),
    () => clock.now,
  );
  return { shell, lines, clock, store };
}

/** Lets the fire-and-forget updates of `ended` land. */
const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('the routing shell', () => {
  it('opens a circuit after the failures in a row, logging the change once, then passes the host over', async () => {
    const { shell, lines } = routing();
    for (let i = 0; i < 2; i++) {
      expect(await shell.admit('h', 'm')).toBe(true);
      shell.ended('h', 'm', true, sample);
      await settle();
    }
    expect(await shell.admit('h', 'm')).toBe(false);
    expect(await shell.admit('h', 'other-model')).toBe(true);
    expect(lines).toEqual(['circuit of host h for m: closed → open (2 failures in a row; passed over for 1000 ms)']);
    expect(await shell.circuits()).toEqual([{ host: 'h', model: 'm', phase: 'open', until: new Date(11_000).toISOString() }]);
  });

  it('after the cool-down lets one probe through, and closes on its success', async () => {
    const { shell, lines, clock } = routing();
    for (let i = 0; i < 2; i++) shell.ended('h', 'm', true, sample);
    await settle();
    clock.now += 1_000;
    const [first, second] = await Promise.all([shell.admit('h', 'm'), shell.admit('h', 'm')]);
    expect([first, second].sort()).toEqual([false, true]);
    shell.ended('h', 'm', false, sample);
    await settle();
    expect(await shell.admit('h', 'm')).toBe(true);
    expect(lines.slice(1)).toEqual([
      'circuit of host h for m: open → half_open (cool-down over; one probe call goes)',
      'circuit of host h for m: half_open → closed (its probe served)',
    ]);
    expect((await shell.circuits())[0].phase).toBe('closed');
  });

  it('keeps a circuit closed while calls serve, and measures every call', async () => {
    const { shell } = routing();
    for (let i = 0; i < 3; i++) shell.ended('h', 'm', false, sample);
    await settle();
    expect(await shell.admit('h', 'm')).toBe(true);
    expect(shell.health.of('h', 'm', 10_000)).toMatchObject({ calls: 3, errorRate: 0, firstByteMs: 10 });
  });

  it('with circuits off, always calls, and still measures', async () => {
    const { shell, store } = routing(0);
    for (let i = 0; i < 5; i++) shell.ended('h', 'm', true, sample);
    await settle();
    expect(await shell.admit('h', 'm')).toBe(true);
    expect(await store.read('h', 'm')).toEqual({ phase: 'closed', failures: 0 });
    expect(shell.health.of('h', 'm', 10_000)?.errorRate).toBe(1);
  });

  it('a store that fails lets the call go, and says so', async () => {
    const { shell, lines, store } = routing();
    store.read = () => Promise.reject(new Error('store away'));
    expect(await shell.admit('h', 'm')).toBe(true);
    expect(lines).toEqual(['circuit of host h for m unknown (store away); calling it']);
  });
});
