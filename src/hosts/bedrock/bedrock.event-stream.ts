import { EventStreamCodec } from '@smithy/eventstream-codec';
import { fromUtf8, toUtf8 } from '@smithy/util-utf8';
import { HostError } from '../../canonical/canonical';
import type { SseMessage, StreamFraming } from '../host-kind';

/**
 * Bedrock's streams (`application/vnd.amazon.eventstream`): binary messages, each a prelude (total
 * length, headers length, CRC), headers, a payload and a CRC. AWS's codec reads one whole message
 * and checks its checksums; cutting the bytes into whole messages is done here, by the prelude's
 * total length, since an HTTP chunk may hold part of one or several.
 */

/** The prelude's total-length field and the smallest message (prelude, its CRC, the message CRC). */
const LENGTH_BYTES = 4;
const SMALLEST = 16;
/** Bedrock's messages are far smaller; a length beyond this is garbage, not a message to wait for. */
const LARGEST = 16 * 1024 * 1024;

const codec = new EventStreamCodec(toUtf8, fromUtf8);

type Headers = ReturnType<EventStreamCodec['decode']>['headers'];

const header = (headers: Headers, name: string): string | undefined => {
  const value = headers[name]?.value;
  return typeof value === 'string' ? value : undefined;
};

/**
 * One message as the decoder reads it: an event as its `:event-type` and JSON payload; an exception
 * (`:message-type: exception`) as its `:exception-type` (`throttlingException`…) and payload
 * (`{"message": …}`). An `error` message (the protocol's own failure, no payload) fails the stream.
 */
function messageOf(bytes: Uint8Array): SseMessage {
  const { headers, body } = codec.decode(bytes);
  const type = header(headers, ':message-type');
  const data = toUtf8(body);
  if (type === 'event') return { event: header(headers, ':event-type'), data };
  if (type === 'exception') return { event: header(headers, ':exception-type') ?? 'exception', data };
  if (type === 'error')
    throw new HostError(
      'upstream_error',
      `${header(headers, ':error-code') ?? 'error'}: ${header(headers, ':error-message') ?? 'upstream reported an error'}`,
    );
  throw new HostError('malformed', `event stream message of unknown type ${JSON.stringify(type)}`);
}

const NOTHING = new Uint8Array(0);

export function eventStreamFraming(): StreamFraming {
  /** Bytes of a message not yet whole. */
  let pending: Uint8Array = NOTHING;
  return {
    feed(chunk) {
      let bytes = chunk;
      if (pending.length > 0) {
        bytes = new Uint8Array(pending.length + chunk.length);
        bytes.set(pending);
        bytes.set(chunk, pending.length);
      }
      const messages: SseMessage[] = [];
      let at = 0;
      while (bytes.length - at >= LENGTH_BYTES) {
        // The prelude's first field, big-endian.
        const length = ((bytes[at] << 24) | (bytes[at + 1] << 16) | (bytes[at + 2] << 8) | bytes[at + 3]) >>> 0;
        if (length < SMALLEST || length > LARGEST)
          throw new HostError('malformed', `event stream message of impossible length ${length}`);
        if (bytes.length - at < length) break;
        messages.push(messageOf(bytes.subarray(at, at + length)));
        at += length;
      }
      // Kept as a copy: the transport may reuse the chunk's memory once this returns.
      pending = at === bytes.length ? NOTHING : bytes.slice(at);
      return messages;
    },
  };
}
