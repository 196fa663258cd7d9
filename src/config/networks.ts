import { isIP } from 'node:net';

/** A network in CIDR notation: its address, its prefix's length and its family. */
export interface Network {
  address: string;
  prefix: number;
  family: 'ipv4' | 'ipv6';
}

export class NetworkListError extends Error {}

/**
 * Networks as an operator writes them — `10.20.0.0/16, 127.0.0.1, ::1/128` (comma- or
 * space-separated; an address alone is itself: /32, /128) —, each checked: the first that is not
 * one is named in the error.
 */
export function parseNetworks(text: string): Network[] {
  const networks: Network[] = [];
  for (const entry of text.split(/[\s,]+/).filter((e) => e !== '')) {
    const [address, prefixText, ...rest] = entry.split('/');
    const version = isIP(address);
    const max = version === 4 ? 32 : 128;
    const prefix = prefixText === undefined ? max : /^\d{1,3}$/.test(prefixText) ? Number(prefixText) : NaN;
    if (version === 0 || rest.length > 0 || !(prefix >= 0 && prefix <= max)) {
      throw new NetworkListError(`"${entry}" is not an address or a network in CIDR notation (10.0.0.0/8, fd00::/8)`);
    }
    networks.push({ address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' });
  }
  return networks;
}
