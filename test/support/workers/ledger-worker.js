'use strict';
// A gateway-like process on the shared stores (configured by environment, like the service).
//   reserve <orgId> <count> <amount>: waits for "go" on stdin, fires <count> concurrent
//     reservations, prints {"admitted":n,"refused":m}.
//   waves <orgId> <count> <amount> <paceMs>: for each "go" line on stdin, starts <count>
//     reservations one every <paceMs> ms, and prints "wave <n> {"admitted":a,"refused":r,"unavailable":u}"
//     (unavailable: the admission failed, the read models' store away); "end" closes it.
//   burst <orgId> <amount>: reserves and settles without end, printing "appending" once under
//     way; it is meant to be killed.
const { loadConfig } = require('../../../dist/src/config/config');
const { openRuntime } = require('../../../dist/src/runtime/runtime');

const facts = (i) => ({ requestId: `w${process.pid}-${i}`, keyId: 'worker', surface: 'test', model: 'test/model' });

async function main() {
  const [mode, orgId, a, b] = process.argv.slice(2);
  const runtime = await openRuntime(loadConfig());
  await runtime.projector.catchUp();
  process.stdout.write('ready\n');
  if (mode === 'reserve') {
    const count = Number(a);
    const amount = Number(b);
    await new Promise((resolve) => process.stdin.once('data', resolve));
    const results = await Promise.all(
      Array.from({ length: count }, (_, i) => runtime.ledger.admit({ ...facts(i), orgId, amount })),
    );
    const admitted = results.filter((r) => r.admitted).length;
    process.stdout.write(`${JSON.stringify({ admitted, refused: count - admitted })}\n`);
    await runtime.close();
    return;
  }
  if (mode === 'waves') {
    const [count, amount, paceMs] = [Number(a), Number(b), Number(process.argv[6])];
    let wave = 0;
    let fired = 0;
    for await (const line of require('node:readline').createInterface({ input: process.stdin })) {
      if (line === 'end') break;
      wave += 1;
      // Each outcome taken as it comes (an admission failing early must not go unhandled).
      const outcomes = [];
      for (let i = 0; i < count; i++) {
        outcomes.push(
          runtime.ledger.admit({ ...facts(fired++), orgId, amount }).then(
            (r) => (r.admitted ? 'admitted' : 'refused'),
            () => 'unavailable',
          ),
        );
        await new Promise((resolve) => setTimeout(resolve, paceMs));
      }
      const results = await Promise.all(outcomes);
      const [admitted, refused, unavailable] = ['admitted', 'refused', 'unavailable'].map(
        (outcome) => results.filter((r) => r === outcome).length,
      );
      process.stdout.write(`wave ${wave} ${JSON.stringify({ admitted, refused, unavailable })}\n`);
    }
    process.stdin.destroy();
    await runtime.close();
    return;
  }
  const amount = Number(a);
  let i = 0;
  const one = async () => {
    const n = i++;
    const admission = await runtime.ledger.admit({ ...facts(n), orgId, amount });
    if (admission.admitted && n % 2 === 0) {
      await runtime.ledger.recordSettlement(admission.ticket, {
        usage: { inputTokens: 10, cacheReadTokens: 40, cacheWriteTokens: 5, cacheWrite1hTokens: 0, outputTokens: 10 },
        prices: { input: 1_000_000, cacheRead: 100_000, cacheWrite: 1_250_000, cacheWrite1h: 2_000_000, output: 2_000_000 },
        host: 'h',
        hostModel: 'hm',
        status: 'ok',
        latencyMs: 1,
      });
    }
  };
  for (;;) {
    if (i === 200) process.stdout.write('appending\n');
    await Promise.all(Array.from({ length: 20 }, one));
  }
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
