import { createHash } from 'node:crypto';

/**
 * The hash chain that makes a log tamper-evident: each chained event's link is SHA-256 over the
 * canonical encoding of the link before it and the event (its stream, revision, type, data and
 * recording time), so editing, deleting, inserting or reordering an event changes every link from
 * there on. (Its position is left out: the order is the chain's own, and the link can be made before
 * the log has given the event its position.) Which events are chained, and in which chain, is the caller's rule (the ledger's: its
 * events, by organization). Pure; the log's writer thread loads it too, so it imports nothing of the project.
 */

/** What a link covers: the event as recorded, nothing the reader derives. */
export interface ChainedEvent {
  streamId: string;
  revision: number;
  type: string;
  data: unknown;
  recordedAt: number;
}

/**
 * RFC 8785 (JSON Canonicalization Scheme): object members sorted by their names' UTF-16 code
 * units, no whitespace, strings and numbers as ECMAScript's JSON.stringify writes them (which is
 * what the RFC specifies for both). Members whose value is undefined are left out, as JSON.stringify
 * does. Non-finite numbers have no JSON form and are refused.
 */
export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return quoted(value);
    case 'number':
      if (!Number.isFinite(value)) throw new TypeError(`canonical JSON has no form for ${value}`);
      // ECMAScript's Number::toString, as JSON.stringify writes a finite number (and -0 as 0).
      return value === 0 ? '0' : String(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'object': {
      if (value === null) return 'null';
      if (Array.isArray(value)) {
        let text = '[';
        for (let i = 0; i < value.length; i++) {
          if (i > 0) text += ',';
          text += value[i] === undefined ? 'null' : canonicalJson(value[i]);
        }
        return `${text}]`;
      }
      const record = value as Record<string, unknown>;
      const names = sortedNames(Object.keys(record));
      let text = '{';
      for (const name of names) {
        const member = record[name];
        if (member === undefined) continue;
        if (text.length > 1) text += ',';
        text += memberPrefix(name) + canonicalJson(member);
      }
      return `${text}}`;
    }
    default:
      throw new TypeError(`canonical JSON has no form for a ${typeof value}`);
  }
}

/**
 * Names in the order of UTF-16 code units, as RFC 8785 §3.2.3 asks (and `<` on strings compares).
 * An event's few dozen are sorted in place: Array.prototype.sort copies them first, on every append.
 */
function sortedNames(names: string[]): string[] {
  if (names.length > 32) return names.sort();
  for (let i = 1; i < names.length; i++) {
    const name = names[i];
    let j = i - 1;
    for (; j >= 0 && names[j] > name; j--) names[j + 1] = names[j];
    names[j + 1] = name;
  }
  return names;
}

/** Characters JSON.stringify escapes (RFC 8785 §3.2.2.2 keeps its escaping): the rest is written as it is. */
// eslint-disable-next-line no-control-regex -- the control characters are what JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
const quoted = (text: string): string => (NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`);

/**
 * A member's name quoted with its colon, kept for the names seen first (events have a few dozen):
 * an event of the ledger is encoded on every append. Bounded, for data whose names are anyone's.
 */
const MEMBER_PREFIXES_KEPT = 4096;
const memberPrefixes = new Map<string, string>();
function memberPrefix(name: string): string {
  let prefix = memberPrefixes.get(name);
  if (prefix === undefined) {
    prefix = `${quoted(name)}:`;
    if (memberPrefixes.size < MEMBER_PREFIXES_KEPT) memberPrefixes.set(name, prefix);
  }
  return prefix;
}

const sha256 = (text: string): string => createHash('sha256').update(text, 'utf8').digest('hex');

/** Where a chain starts: the link before its first event, bound to the chain's id (an organization's). */
export const chainGenesis = (chainId: string): string =>
  sha256(canonicalJson({ chain: 'model-gateway/ledger-chain/v1', id: chainId }));

/** The link of `event`, following `previous` (a link, or the chain's genesis). */
export const chainLink = (previous: string, event: ChainedEvent): string =>
  chainLinkOf(previous, event.streamId, event.revision, event.type, canonicalJson(event.data), event.recordedAt);

/**
 * The same link from the event's data already in canonical JSON: what the log's writer does at commit,
 * the appender having encoded the data canonically (off the writer, which commits for every process
 * request). The members in RFC 8785's order: data, prev, recordedAt, revision, streamId, type.
 */
export function chainLinkOf(
  previous: string,
  streamId: string,
  revision: number,
  type: string,
  canonicalData: string,
  recordedAt: number,
): string {
  return sha256(
    `{"data":${canonicalData},"prev":${quoted(previous)},"recordedAt":${canonicalJson(recordedAt)},"revision":${canonicalJson(revision)},"streamId":${quoted(streamId)},"type":${quoted(type)}}`,
  );
}

/** Which chain an event belongs to (its id), or null for an event outside every chain. */
export interface ChainRule {
  /** Types of the events chained. */
  types: readonly string[];
  /** The data member naming the chain (an organization's id): an event without it as a string is outside. */
  by: string;
}

export function chainIdOf(rule: ChainRule, type: string, data: unknown): string | null {
  if (!rule.types.includes(type) || typeof data !== 'object' || data === null) return null;
  const id = (data as Record<string, unknown>)[rule.by];
  return typeof id === 'string' ? id : null;
}
