'use strict';
// Appends to a SQLite log as a gateway's ledger does, for a test counting the process's fsyncs:
// `node durability-worker.js <file> <count> <disk|log> [here]` (`here`: committed on the main
// thread, as an append made alone is). One append at a time, each to a new stream.
const { SqliteEventStore } = require('../../../dist/src/eventstore/sqlite-event-store');

async function main() {
  const [file, countText, durability, here] = process.argv.slice(2);
  const store = new SqliteEventStore(file, here === 'here' ? { commitAloneHere: () => true } : {});
  for (let i = 0; i < Number(countText); i++)
    await store.append(`durability-${i}`, [{ type: 'Counted', data: { i, payload: 'x'.repeat(300) } }], 'no_stream', durability);
  await store.close();
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
