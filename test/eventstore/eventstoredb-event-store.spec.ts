import { describeEventStoreContract } from './event-store.contract';

// No EventStoreDB server can run on the CI machine; docker-compose.yml starts one for users.
const url = process.env.EVENTSTORE_URL;
if (!url) {
  process.stdout.write(
    'EventStoreDB contract suite skipped: set EVENTSTORE_URL (e.g. esdb://localhost:2113?tls=false) to run it.\n',
  );
}

describeEventStoreContract(
  'EventStoreDB',
  async () => {
    const { EventStoreDbEventStore } = await import('../../src/eventstore/eventstoredb-event-store');
    return EventStoreDbEventStore.connect(url!);
  },
  Boolean(url),
);
