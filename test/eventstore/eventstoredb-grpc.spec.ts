import { EventStoreDbEventStore } from '../../src/eventstore/eventstoredb-event-store';
import { EsdbServer } from '../support/esdb-server/server';
import { describeEventStoreContract } from './event-store.contract';

let server: EsdbServer;
beforeAll(async () => {
  server = await EsdbServer.start({ systemEventEvery: 3 });
});
afterAll(async () => {
  await server.close();
});

describeEventStoreContract('EventStoreDB protocol server over gRPC', async () => EventStoreDbEventStore.connect(server.url));
