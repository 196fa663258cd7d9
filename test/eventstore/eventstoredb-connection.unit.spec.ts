// The client's own parser, to check that what the configuration accepts is what it reads.
import { parseConnectionString as clientParse } from '@eventstore/db-client/dist/Client/parseConnectionString';
import { EVENTSTORE_SCHEMES, EventStoreUrlError, parseEventStoreUrl } from '../../src/eventstore/eventstoredb-connection';

describe('EVENTSTORE_URL', () => {
  const single = Object.keys(EVENTSTORE_SCHEMES).filter((s) => !s.endsWith('+discover'));
  const discover = Object.keys(EVENTSTORE_SCHEMES).filter((s) => s.endsWith('+discover'));

  it('covers esdb, kurrentdb and kdb, each with its +discover form', () => {
    expect(single.sort()).toEqual(['esdb', 'kdb', 'kurrentdb']);
    expect(discover.sort()).toEqual(['esdb+discover', 'kdb+discover', 'kurrentdb+discover']);
  });

  it('is refused by client 6.2.1 with a KurrentDB scheme (why they are rewritten)', () => {
    expect(() => clientParse('kurrentdb://localhost:2113?tls=false')).toThrow('esdb:// or esdb+discover://');
    expect(() => clientParse('kdb://localhost:2113?tls=false')).toThrow();
  });

  it.each(single)('%s:// with one node, insecure, parses for the client as it was meant', (scheme) => {
    const parsed = parseEventStoreUrl(`${scheme}://localhost:2113?tls=false`);
    expect(parsed).toMatchObject({
      secure: false,
      credentials: null,
      discover: false,
      hosts: [{ address: 'localhost', port: 2113 }],
    });
    expect(parsed.connectionString).toBe('esdb://localhost:2113?tls=false');
    expect(clientParse(parsed.connectionString)).toMatchObject({
      dnsDiscover: false,
      tls: false,
      hosts: [{ address: 'localhost', port: 2113 }],
    });
  });

  it.each(single)('%s:// with a gossip seed list, credentials and options parses for the client', (scheme) => {
    const url = `${scheme.toUpperCase()}://ops:p%40ss%3Aw%2Frd@node1:2113,node2.example.com:2114,node3/?nodePreference=Leader&keepAliveInterval=20000&connection_name=gw&tlsCAFile=%2Fetc%2Fca.crt`;
    const parsed = parseEventStoreUrl(url);
    expect(parsed.secure).toBe(true);
    expect(parsed.credentials).toEqual({ username: 'ops', password: 'p@ss:w/rd' });
    expect(clientParse(parsed.connectionString)).toEqual({
      dnsDiscover: false,
      defaultCredentials: { username: 'ops', password: 'p@ss:w/rd' },
      hosts: [
        { address: 'node1', port: 2113 },
        { address: 'node2.example.com', port: 2114 },
        { address: 'node3', port: 2113 },
      ],
      nodePreference: 'leader',
      keepAliveInterval: 20000,
      connectionName: 'gw',
      tlsCAFile: '/etc/ca.crt',
    });
  });

  it.each(discover)('%s:// discovers a cluster through DNS, for the client too', (scheme) => {
    const parsed = parseEventStoreUrl(`${scheme}://admin:changeit@cluster.example.com:2113?nodePreference=leader&tls=true`);
    expect(parsed).toMatchObject({ discover: true, secure: true, hosts: [{ address: 'cluster.example.com', port: 2113 }] });
    expect(clientParse(parsed.connectionString)).toMatchObject({
      dnsDiscover: true,
      tls: true,
      nodePreference: 'leader',
      defaultCredentials: { username: 'admin', password: 'changeit' },
      hosts: [{ address: 'cluster.example.com', port: 2113 }],
    });
  });

  it.each([
    ['http://localhost:2113', 'must start with esdb://'],
    ['localhost:2113', 'must start with esdb://'],
    ['esdb://localhost:2113', 'needs username:password@ in secure mode'],
    ['kurrentdb+discover://cluster.example.com', 'needs username:password@ in secure mode'],
    ['esdb://localhost:2113?tsl=false', 'does not know: "tsl"'],
    ['esdb://localhost:2113?tls=no', 'tls must be true or false'],
    ['esdb://a:b@localhost:2113?tlsVerifyCert=false', 'tlsVerifyCert=false'],
    ['esdb://localhost:2113?tls=false&throwOnAppendFailure=false', 'throwOnAppendFailure=false'],
    ['esdb://localhost:99999?tls=false', 'port'],
    ['esdb://localhost:21x3?tls=false', 'port'],
    ['esdb://?tls=false', 'names no host'],
    ['esdb://a:b:c@[::1]:2113?tls=false', 'host'],
    ['esdb+discover://one,two?tls=false', 'one DNS name'],
    ['esdb://localhost?tls=false&nodePreference=nearest', 'nodePreference must be'],
    ['esdb://localhost?tls=false&nodePreference=follower', 'talks to the leader'],
    ['esdb://localhost?tls=false&nodePreference=read_only_replica', 'talks to the leader'],
    ['esdb://localhost?tls=false&defaultDeadline=soon', 'defaultDeadline must be a whole number'],
    ['esdb://localhost?tls=false&tls=true', 'twice'],
    ['esdb://user@localhost?tls=false', 'username:password'],
  ])('refuses %s', (url, message) => {
    expect(() => parseEventStoreUrl(url)).toThrow(EventStoreUrlError);
    expect(() => parseEventStoreUrl(url)).toThrow(message);
  });

  it('never repeats the password in what it refuses', () => {
    for (const url of [
      'esdb://admin:s3cret-pass@localhost:2113?tlsVerifyCert=false',
      'esdb://admin:s3cret-pass@bad host:2113',
      // A raw ? in the password: its head was read as the port of a host named admin.
      'esdb://admin:s3cret?zz9@db:2113',
      'esdb://admin:s3cret?zz9@db:2113?tls=false',
    ]) {
      expect(() => parseEventStoreUrl(url)).toThrow(EventStoreUrlError);
      try {
        parseEventStoreUrl(url);
      } catch (error) {
        expect((error as Error).message).not.toMatch(/s3cret|zz9/);
      }
    }
  });
});
