import { createHash, randomUUID } from 'node:crypto';
import type { ExpectedRevision, NewEvent } from './event-store';

/**
 * Event ids for an append to EventStoreDB. The server recognises an append it already holds by
 * its events' ids: with an exact expected revision (or no_stream) it answers a repeat with
 * success and writes nothing (idempotent); with 'any' it only does so for recent appends (best
 * effort). So the ids of an append are derived from what it says: the stream, the revision it
 * expects, each event's place in it, type and data. A retry after an unknown outcome, or the same
 * decision made twice, carries the same ids and is written once; any other append at that
 * revision has other ids and meets a WrongExpectedRevisionError.
 *
 * With 'any', identical events may legitimately be appended twice, so each append gets random
 * ids (kept across the adapter's own retries of it).
 */
export function eventIds(streamId: string, expected: ExpectedRevision, events: NewEvent[]): string[] {
  if (expected === 'any') return events.map(() => randomUUID());
  return events.map((event, index) => {
    const hash = createHash('sha256');
    // Lengths first, so that no two different inputs run together into the same bytes.
    for (const part of [streamId, String(expected), String(index), event.type, JSON.stringify(event.data) ?? 'undefined']) {
      hash.update(`${Buffer.byteLength(part)}:`);
      hash.update(part);
    }
    return asUuid(hash.digest());
  });
}

/** The first 16 bytes of a digest as a UUID of version 8 (custom, RFC 9562), variant 10. */
function asUuid(digest: Buffer): string {
  const bytes = Buffer.from(digest.subarray(0, 16));
  bytes[6] = (bytes[6] & 0x0f) | 0x80;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
