import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import type { Network } from '../config/networks';

/**
 * Where alerts' webhooks may go. Organizations choose their webhook's URL, and the gateway POSTs to
 * it from inside the operator's network: to a loopback, private, link-local (cloud metadata) or
 * otherwise special address, that would let any organization's owner reach services never meant to
 * be reached from outside (a blind SSRF). Those addresses are refused unless the operator allows
 * their networks (`ALERT_WEBHOOK_ALLOW_CIDRS`), as GitLab, Svix and Stripe's Smokescreen do.
 *
 * The check that counts is made when the connection is made, on every address the name resolves to
 * (see dispatcher): a name's answer may change between the URL's saving and its delivery (DNS
 * rebinding). A URL whose host is an address is refused already when it is saved (see urlRefusal).
 */

/** The special-purpose networks (IANA's registries) a webhook may not reach unless allowed, each with what it is. */
const FORBIDDEN: ReadonlyArray<[address: string, prefix: number, what: string]> = [
  ['0.0.0.0', 8, 'an address of "this network" (0.0.0.0/8)'],
  ['10.0.0.0', 8, 'a private address (10.0.0.0/8)'],
  ['100.64.0.0', 10, 'a shared, carrier-grade NAT address (100.64.0.0/10)'],
  ['127.0.0.0', 8, 'a loopback address (127.0.0.0/8)'],
  ['169.254.0.0', 16, 'a link-local address, where cloud metadata is (169.254.0.0/16)'],
  ['172.16.0.0', 12, 'a private address (172.16.0.0/12)'],
  ['192.0.0.0', 24, 'an address reserved for protocols (192.0.0.0/24)'],
  ['192.0.2.0', 24, 'an address reserved for documentation (192.0.2.0/24)'],
  ['192.168.0.0', 16, 'a private address (192.168.0.0/16)'],
  ['198.18.0.0', 15, 'an address reserved for benchmarks (198.18.0.0/15)'],
  ['198.51.100.0', 24, 'an address reserved for documentation (198.51.100.0/24)'],
  ['203.0.113.0', 24, 'an address reserved for documentation (203.0.113.0/24)'],
  ['224.0.0.0', 4, 'a multicast address (224.0.0.0/4)'],
  ['240.0.0.0', 4, 'a reserved address (240.0.0.0/4)'],
  ['::', 128, 'the unspecified address (::)'],
  ['::1', 128, 'the loopback address (::1)'],
  ['::', 96, 'an IPv4-compatible address, deprecated (::/96)'],
  ['64:ff9b:1::', 48, 'a local-use NAT64 address (64:ff9b:1::/48)'],
  ['100::', 64, 'a discard-only address (100::/64)'],
  ['2001:db8::', 32, 'an address reserved for documentation (2001:db8::/32)'],
  ['fc00::', 7, 'a unique local, private address (fc00::/7)'],
  ['fe80::', 10, 'a link-local address (fe80::/10)'],
  ['fec0::', 10, 'a site-local address, deprecated (fec0::/10)'],
  ['ff00::', 8, 'a multicast address (ff00::/8)'],
];

/** The 16-bit groups of an IPv6 address (a dotted IPv4 tail read as two), or null when it is not one. */
function ipv6Groups(address: string): number[] | null {
  const text = address.split('%')[0];
  if (isIP(text) !== 6) return null;
  const [head, tail] = text.split('::');
  const groupsOf = (part: string | undefined): number[] =>
    part === undefined || part === ''
      ? []
      : part.split(':').flatMap((group) => {
          if (group.includes('.')) {
            const [a, b, c, d] = group.split('.').map(Number);
            return [(a << 8) | b, (c << 8) | d];
          }
          return [parseInt(group, 16)];
        });
  const before = groupsOf(head);
  const after = tail === undefined ? [] : groupsOf(tail);
  return [...before, ...Array<number>(8 - before.length - after.length).fill(0), ...after];
}

const ipv4Of = (high: number, low: number) => `${high >> 8}.${high & 0xff}.${low >> 8}.${low & 0xff}`;

/**
 * The IPv4 address an IPv6 one stands for, where the connection goes on to it: IPv4-mapped
 * (`::ffff:127.0.0.1`), NAT64 (`64:ff9b::a9fe:a9fe` is 169.254.169.254 behind a NAT64 gateway) and
 * 6to4 (`2002:7f00:1::` routes to 127.0.0.1).
 */
function embeddedIpv4(groups: number[]): string | null {
  const zeros = (from: number, to: number) => groups.slice(from, to).every((g) => g === 0);
  if (zeros(0, 5) && groups[5] === 0xffff) return ipv4Of(groups[6], groups[7]);
  if (groups[0] === 0x64 && groups[1] === 0xff9b && zeros(2, 6)) return ipv4Of(groups[6], groups[7]);
  if (groups[0] === 0x2002) return ipv4Of(groups[1], groups[2]);
  return null;
}

/** A connection refused because every address its host resolved to is one webhooks may not reach. */
export class ForbiddenDestinationError extends Error {
  readonly code = 'ERR_WEBHOOK_DESTINATION_FORBIDDEN';
  constructor(readonly why: string) {
    super(why);
    this.name = 'ForbiddenDestinationError';
  }
}

/** The refusal `error` carries, itself or as its cause (undici may wrap what the connector gave). */
export function forbiddenDestinationOf(error: unknown): ForbiddenDestinationError | null {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e instanceof ForbiddenDestinationError) return e;
  }
  return null;
}

export class WebhookDestinations {
  private readonly forbidden: Array<{ list: BlockList; what: string }>;
  private readonly allowed = new BlockList();

  /** `allowed`: the networks the operator lets webhooks reach although they are special (`ALERT_WEBHOOK_ALLOW_CIDRS`). */
  constructor(allowed: readonly Network[]) {
    for (const n of allowed) this.allowed.addSubnet(n.address, n.prefix, n.family);
    this.forbidden = FORBIDDEN.map(([address, prefix, what]) => {
      const list = new BlockList();
      list.addSubnet(address, prefix, isIP(address) === 4 ? 'ipv4' : 'ipv6');
      return { list, what };
    });
  }

  /** Why a webhook may not be sent to `address` (the kind of address it is: "a loopback address (127.0.0.0/8)"), or null when it may. */
  refusal(address: string): string | null {
    const bare = address.split('%')[0];
    const version = isIP(bare);
    if (version === 0) return 'not an IP address';
    const family = version === 4 ? 'ipv4' : 'ipv6';
    if (this.allowed.check(bare, family)) return null;
    if (version === 6) {
      const groups = ipv6Groups(bare)!;
      const inner = embeddedIpv4(groups);
      // An address standing for an IPv4 one is judged as that one (allowed as it is, too).
      if (inner !== null) {
        const why = this.refusal(inner);
        return why === null ? null : `${why}, in an IPv6 form (${bare} stands for ${inner})`;
      }
    }
    for (const { list, what } of this.forbidden) if (list.check(bare, family)) return what;
    return null;
  }

  /**
   * Why a webhook URL may not be saved: its host is an address webhooks may not reach. A name is
   * judged when a delivery connects (its answer may change meanwhile), not here. The URL is never
   * named: it may carry a token.
   */
  urlRefusal(url: string): string | null {
    const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
    if (isIP(host) === 0) return null;
    const why = this.refusal(host);
    return why === null ? null : `its host is ${why.replace(/ \(\S+ stands for \S+\)$/, '')}`;
  }

  /**
   * Resolves a name as the connection would (every address), and gives the connection only the
   * addresses webhooks may reach: none left, it fails with a ForbiddenDestinationError.
   */
  private readonly lookup: LookupFunction = (hostname, options, callback) => {
    dnsLookup(hostname, { ...options, all: true }, (error, found: LookupAddress[]) => {
      if (error) return callback(error, '', 0);
      const permitted = found.filter((a) => this.refusal(a.address) === null);
      if (permitted.length === 0) {
        const why = found.map((a) => `${a.address}, ${this.refusal(a.address)}`).join('; ');
        return callback(
          new ForbiddenDestinationError(`${hostname} resolves only to addresses alerts may not reach: ${why}`),
          '',
          0,
        );
      }
      if (options.all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, permitted);
      callback(null, permitted[0].address, permitted[0].family);
    });
  };

  /**
   * The HTTP client's connections for webhooks: an address given as the URL's host is checked before
   * connecting, a name resolved through `lookup` (so that no answer, however late it changes, reaches
   * an address refused). `connectTimeoutMs`: the longest a connection may take to open.
   */
  dispatcher(connectTimeoutMs: number): Agent {
    const connect = buildConnector({ lookup: this.lookup, timeout: connectTimeoutMs });
    return new Agent({
      connect: (options, callback) => {
        const why = isIP(options.hostname) === 0 ? null : this.refusal(options.hostname);
        if (why !== null) {
          callback(new ForbiddenDestinationError(`${options.hostname} is ${why}, which alerts may not reach`), null);
          return;
        }
        connect(options, callback);
      },
    });
  }
}
