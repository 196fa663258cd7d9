import cluster from 'node:cluster';
import { AggregatorRegistry, type Registry } from 'prom-client';

/** The environment variable telling a worker its place in the set (1 to WORKERS), set by the primary when it forks it. */
export const WORKER_INDEX_VARIABLE = 'GATEWAY_WORKER_INDEX';

/** A worker asking the primary for the whole set's metrics, and the primary's answer. */
const ASK = 'gateway:metrics';
const ANSWER = 'gateway:metrics-answer';

interface Answer {
  type: typeof ANSWER;
  id: number;
  text?: string;
  error?: string;
}

/**
 * In a worker of a set (WORKERS > 1): answers the primary's gathering from the start (with nothing
 * until `registry` is given), so a worker still starting never holds a scrape up to prom-client's
 * 5-second timeout.
 */
export function answerPrimaryGathering(): void {
  new AggregatorRegistry();
}

/**
 * In a worker: `registry` is what the primary gathers from this worker; the function returned asks
 * the primary for every worker's, summed (counters, histograms) or as each gauge says.
 */
export function metricsOfTheSet(registry: Registry): () => Promise<string> {
  AggregatorRegistry.setRegistries([registry]);
  answerPrimaryGathering();
  let next = 0;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (error: Error) => void }>();
  process.on('message', (message: Answer) => {
    if (message?.type !== ANSWER) return;
    const asked = waiting.get(message.id);
    if (!asked) return;
    waiting.delete(message.id);
    if (message.error === undefined) asked.resolve(message.text ?? '');
    else asked.reject(new Error(`the worker set's metrics could not be gathered: ${message.error}`));
  });
  return () =>
    new Promise((resolve, reject) => {
      const id = next++;
      waiting.set(id, { resolve, reject });
      process.send!({ type: ASK, id });
    });
}

/** In the primary: answers each worker's ask with every connected worker's metrics, aggregated. */
export function gatherForWorkers(): void {
  const aggregator = new AggregatorRegistry();
  cluster.on('message', (worker, message: { type?: string; id?: number }) => {
    if (message?.type !== ASK) return;
    const reply = (answer: Omit<Answer, 'type' | 'id'>) => {
      if (worker.isConnected()) worker.send({ type: ANSWER, id: message.id, ...answer });
    };
    aggregator.clusterMetrics().then(
      (text) => reply({ text }),
      (error: Error) => reply({ error: error.message }),
    );
  });
}
