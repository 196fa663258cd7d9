import { Histogram, Registry } from 'prom-client';
import { TalliedHistogram } from '../../src/observability/metrics';

describe('a tallied histogram', () => {
  const bounds = [0.005, 0.01, 0.1, 1, 10];
  const observations: Array<[string, string, number]> = [
    ['chat-completions', 'a/m', 0.004],
    ['chat-completions', 'a/m', 0.005],
    ['chat-completions', 'a/m', 0.0051],
    ['messages', 'a/m', 2],
    ['messages', '', 11],
    ['chat-completions', 'a/m', 0.5],
  ];

  it('shows what a prom-client histogram fed the same observations shows, as text and as JSON (what a worker set sums)', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    const tallied = new TalliedHistogram('x_seconds', 'help', ['surface', 'model'], bounds, ours);
    const reference = new Histogram({
      name: 'x_seconds',
      help: 'help',
      labelNames: ['surface', 'model'],
      buckets: bounds,
      registers: [theirs],
    });
    for (const [surface, model, value] of observations) {
      tallied.observe(`${surface}\u0000${model}`, value);
      reference.observe({ surface, model }, value);
    }
    expect(await ours.metrics()).toBe(await theirs.metrics());
    expect(await ours.getMetricsAsJSON()).toEqual(await theirs.getMetricsAsJSON());
  });

  it('without labels, shows its one series at 0 before any observation, as prom-client does', async () => {
    const ours = new Registry();
    const theirs = new Registry();
    new TalliedHistogram('y_seconds', 'help', [], bounds, ours);
    new Histogram({ name: 'y_seconds', help: 'help', buckets: bounds, registers: [theirs] });
    expect(await ours.metrics()).toBe(await theirs.metrics());
  });
});
