'use strict';
// A separate process appending to a shared SQLite log: `node append-worker.js <file> <count> <tag> [here]`
// (`here`: it commits its appends, made one at a time, on its main thread, as a gateway answering one request does).
// Each append claims the next revision of shared streams, retrying on conflicts, so several
// such processes race for the same revisions. Prints "ready" first, "done" when finished.
const { SqliteEventStore } = require('../../../dist/src/eventstore/sqlite-event-store');
const { WrongExpectedRevisionError } = require('../../../dist/src/eventstore/event-store');

async function main() {
  const [file, countText, tag, here] = process.argv.slice(2);
  const store = new SqliteEventStore(file, here === 'here' ? { commitAloneHere: () => true } : {});
  process.stdout.write('ready\n');
  const count = Number(countText);
  for (let i = 0; i < count; i++) {
    const streamId = `shared-${i % 5}`;
    for (;;) {
      const current = await store.readStream(streamId);
      try {
        await store.append(
          streamId,
          [{ type: 'Counted', data: { tag, i, payload: 'x'.repeat(200) } }],
          current.length === 0 ? 'no_stream' : current.length - 1,
        );
        break;
      } catch (error) {
        if (!(error instanceof WrongExpectedRevisionError)) throw error;
      }
    }
    if (i === 10) process.stdout.write('appending\n');
  }
  await store.close();
  process.stdout.write('done\n');
}

main().catch((error) => {
  process.stderr.write(`${error.stack}\n`);
  process.exit(1);
});
