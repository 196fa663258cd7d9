/**
 * EVENTSTORE_URL, checked at start-up and turned into what `@eventstore/db-client` 6.2.1 parses.
 * No client is loaded here: the configuration checks it without the gRPC stack.
 *
 * 6.2.1 knows only `esdb://` and `esdb+discover://`; KurrentDB's `kurrentdb://`, `kdb://` (and their
 * `+discover` forms) name the same thing and are rewritten to them. What the client would only warn
 * about and then ignore (an unknown option, `tlsVerifyCert=false`) is refused here, as is what the
 * gateway cannot work with (secure mode without credentials, `throwOnAppendFailure=false`, reads
 * from followers).
 */

export class EventStoreUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EventStoreUrlError';
  }
}

export interface EventStoreCredentials {
  username: string;
  password: string;
}

export interface EventStoreConnection {
  /** The connection string in the form the client parses: `esdb://` or `esdb+discover://`. */
  connectionString: string;
  /** TLS on (the client's default unless `tls=false`). */
  secure: boolean;
  /** From `username:password@`; null without. */
  credentials: EventStoreCredentials | null;
  /** Cluster discovery through DNS (`+discover`). */
  discover: boolean;
  hosts: Array<{ address: string; port: number }>;
}

/** Each accepted scheme and the one 6.2.1 understands. */
export const EVENTSTORE_SCHEMES: Readonly<Record<string, 'esdb' | 'esdb+discover'>> = {
  esdb: 'esdb',
  'esdb+discover': 'esdb+discover',
  kurrentdb: 'esdb',
  'kurrentdb+discover': 'esdb+discover',
  kdb: 'esdb',
  'kdb+discover': 'esdb+discover',
};

type OptionKind = 'boolean' | 'integer' | 'text' | 'nodePreference';

/** The options 6.2.1 reads, by their canonical name. */
const OPTIONS: Record<string, OptionKind> = {
  tls: 'boolean',
  tlsVerifyCert: 'boolean',
  tlsCAFile: 'text',
  userCertFile: 'text',
  userKeyFile: 'text',
  connectionName: 'text',
  nodePreference: 'nodePreference',
  maxDiscoverAttempts: 'integer',
  discoveryInterval: 'integer',
  gossipTimeout: 'integer',
  defaultDeadline: 'integer',
  keepAliveInterval: 'integer',
  keepAliveTimeout: 'integer',
  throwOnAppendFailure: 'boolean',
};

const NODE_PREFERENCES: Record<string, string> = {
  leader: 'leader',
  follower: 'follower',
  readonlyreplica: 'read_only_replica',
  random: 'random',
};

/** The client compares option names without case, `_` or `-`. */
const flat = (name: string): string => name.trim().toLowerCase().replace(/[_-]/g, '');
const OPTION_BY_FLAT_NAME = new Map(Object.keys(OPTIONS).map((name) => [flat(name), name]));

/** Characters the client's host pattern refuses. */
const HOST_PATTERN = /^[^$+!?*'(),;[\]{}|"%~#<>=&@/\s:]+$/;

function decode(part: string, what: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    throw new EventStoreUrlError(`has a badly percent-encoded ${what}`);
  }
}

/** Parses EVENTSTORE_URL; the messages never repeat the password. */
export function parseEventStoreUrl(raw: string): EventStoreConnection {
  const text = raw.trim().replace(/\/+$/, '');
  const accepted = Object.keys(EVENTSTORE_SCHEMES)
    .map((s) => `${s}://`)
    .join(', ');
  const schemeEnd = text.indexOf('://');
  const scheme = schemeEnd > 0 ? text.slice(0, schemeEnd).toLowerCase() : '';
  const target = EVENTSTORE_SCHEMES[scheme];
  if (!target) throw new EventStoreUrlError(`must start with ${accepted}${scheme ? `, got ${scheme}://` : ''}`);
  let rest = text.slice(schemeEnd + 3);

  // A raw ? in the password (`admin:pa?ss@db`) would start the query there: the password's tail
  // would be read as options and its head as a host, and quoted back in the refusal. An @ after
  // the query's start with no option (key=value) before it is such a password.
  const queryAt = rest.indexOf('?');
  const lastAt = rest.lastIndexOf('@');
  if (queryAt >= 0 && lastAt > queryAt && !rest.slice(0, queryAt).includes('@') && !rest.slice(queryAt, lastAt).includes('=')) {
    throw new EventStoreUrlError(
      'has credentials with a raw ? (percent-encode ?, #, @ and : in the username and password: ? is %3F)',
    );
  }
  const query = queryAt >= 0 ? rest.slice(queryAt + 1) : '';
  rest = (queryAt >= 0 ? rest.slice(0, queryAt) : rest).replace(/\/+$/, '');

  let credentials: EventStoreCredentials | null = null;
  const at = rest.lastIndexOf('@');
  if (at >= 0) {
    const userInfo = rest.slice(0, at);
    rest = rest.slice(at + 1);
    const colon = userInfo.indexOf(':');
    if (colon <= 0 || colon === userInfo.length - 1) {
      throw new EventStoreUrlError('has credentials that are not username:password (percent-encode any : or @ in them)');
    }
    credentials = {
      username: decode(userInfo.slice(0, colon), 'username'),
      password: decode(userInfo.slice(colon + 1), 'password'),
    };
  }

  if (!rest) throw new EventStoreUrlError('names no host');
  const hosts = rest.split(',').map((entry) => {
    const [address, port, ...extra] = entry.trim().split(':');
    if (!address || !HOST_PATTERN.test(address) || extra.length > 0) {
      throw new EventStoreUrlError(`has a host that is not host or host:port: "${entry.trim()}"`);
    }
    const portNumber = port === undefined ? 2113 : /^\d{1,5}$/.test(port) ? Number(port) : NaN;
    if (!(portNumber >= 1 && portNumber <= 65_535)) throw new EventStoreUrlError(`has a port that is not 1 to 65535: "${port}"`);
    return { address, port: portNumber };
  });
  const discover = target === 'esdb+discover';
  if (discover && hosts.length > 1)
    throw new EventStoreUrlError(`with ${scheme}:// takes one DNS name to discover the cluster from`);

  const options = new Map<string, string>();
  for (const pair of query ? query.split('&') : []) {
    const eq = pair.indexOf('=');
    const key = eq > 0 ? pair.slice(0, eq) : pair;
    const value = eq > 0 ? decode(pair.slice(eq + 1), `value of ${key}`).trim() : '';
    const name = OPTION_BY_FLAT_NAME.get(flat(key));
    if (!name) throw new EventStoreUrlError(`has an option @eventstore/db-client 6.2.1 does not know: "${key}"`);
    if (!value) throw new EventStoreUrlError(`option ${name} needs a value`);
    if (options.has(name)) throw new EventStoreUrlError(`gives option ${name} twice`);
    const kind = OPTIONS[name];
    if (kind === 'boolean' && value !== 'true' && value !== 'false')
      throw new EventStoreUrlError(`option ${name} must be true or false`);
    if (kind === 'integer' && !/^\d+$/.test(value)) throw new EventStoreUrlError(`option ${name} must be a whole number`);
    if (kind === 'nodePreference') {
      const preference = NODE_PREFERENCES[flat(value)];
      if (!preference) throw new EventStoreUrlError(`option nodePreference must be leader, follower, readOnlyReplica or random`);
      options.set(name, preference);
      continue;
    }
    options.set(name, value);
  }
  if (options.get('tlsVerifyCert') === 'false') {
    throw new EventStoreUrlError(
      'sets tlsVerifyCert=false, which @eventstore/db-client 6.2.1 ignores: give the CA with tlsCAFile (or NODE_EXTRA_CA_CERTS)',
    );
  }
  const preference = options.get('nodePreference');
  if (preference && preference !== 'leader') {
    throw new EventStoreUrlError(
      `sets nodePreference=${preference}: the gateway reads what it has just written (a stream before deciding, an append's last event), so it talks to the leader`,
    );
  }
  if (options.get('throwOnAppendFailure') === 'false') {
    throw new EventStoreUrlError('sets throwOnAppendFailure=false: the gateway needs conflicting appends to fail');
  }
  const secure = options.get('tls') !== 'false';
  if (secure && !credentials) {
    throw new EventStoreUrlError(
      'needs username:password@ in secure mode (TLS, the default): the gateway reads $all, which takes a user in $admins ' +
        "(or $ops, or one that $all's ACL lets read), and writes its own streams; or set tls=false for an insecure node",
    );
  }

  const userInfo = credentials ? `${encodeURIComponent(credentials.username)}:${encodeURIComponent(credentials.password)}@` : '';
  const hostList = hosts.map((h) => `${h.address}:${h.port}`).join(',');
  const search = [...options].map(([name, value]) => `${name}=${encodeURIComponent(value)}`).join('&');
  return {
    connectionString: `${target}://${userInfo}${hostList}${search ? `?${search}` : ''}`,
    secure,
    credentials,
    discover,
    hosts,
  };
}
