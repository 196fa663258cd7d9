import type { CanonicalEvent, HostError, Usage } from '../canonical/canonical';
import { retryDecision, type RetryPolicy } from '../routing/retry';

/**
 * The attempt: calling a model's hosts in turn (the same one again after a backoff while its
 * failure is transient and its retries last, then the next one, while nothing was produced and
 * the failure was the host's), under one deadline, until exactly one ending. A state machine the
 * shell feeds: each step updates the state the shell owns and says what to do next. Streamed
 * events only move counters (no copy of the state per token).
 */

/** How a request ended: exactly one per request. */
export type Ending =
  | { readonly kind: 'complete' }
  /**
   * The client left. `readToEnd`: the host was read to its end after that (nothing more forwarded),
   * so its own count of what it produced, hidden reasoning included, bills the request.
   */
  | { readonly kind: 'abort'; readonly readToEnd?: true }
  /** The gateway shutting down ended it: still open when its grace period (SHUTDOWN_GRACE_MS) ended. */
  | { readonly kind: 'shutdown' }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'failed'; readonly error: HostError };

/** What the attempt hears besides the host's own events. */
export type AttemptSignal =
  /**
   * `msLeft`: time to the request's deadline; `random`: a draw in [0, 1) for the backoff's jitter;
   * `anotherCredential`: the failure was the credential's and another of the host's pool is ready (see KeyPools.anotherCredential).
   */
  | {
      readonly type: 'host_failed';
      readonly error: HostError;
      readonly msLeft: number;
      readonly random: number;
      readonly anotherCredential: boolean;
    }
  | { readonly type: 'host_complete' }
  | { readonly type: 'deadline' }
  /**
   * The client left. `readOn`: the host may produce what is never delivered (a reasoning model's
   * hidden reasoning), which it charges for all the same: the call in flight is read to its end for
   * its count rather than cut.
   */
  | { readonly type: 'abort'; readonly readOn?: boolean }
  | { readonly type: 'shutdown' };

export type AttemptInput = CanonicalEvent | AttemptSignal;

export const HOST_COMPLETE: AttemptSignal = { type: 'host_complete' };
export const DEADLINE: AttemptSignal = { type: 'deadline' };
export const ABORT: AttemptSignal = { type: 'abort' };
export const ABORT_READING_ON: AttemptSignal = { type: 'abort', readOn: true };
export const SHUTDOWN: AttemptSignal = { type: 'shutdown' };
export const hostFailed = (error: HostError, msLeft = Infinity, random = 0, anotherCredential = false): AttemptSignal => ({
  type: 'host_failed',
  error,
  msLeft,
  random,
  anotherCredential,
});

/**
 * What to do after a step. A host event is forwarded to the client, or skipped (a second
 * `ready`, from a fallback host); a signal moves on to the next host or ends the request
 * (`state.ending` says how). Anything after the ending is ignored.
 */
export type EventAction = 'forward' | 'skip' | 'ignore';
export type SignalAction = 'other_credential' | 'retry_host' | 'next_host' | 'read_on' | 'end' | 'ignore';

export interface AttemptState {
  /** The host being called: an index into the admitted hosts. */
  hostIndex: number;
  readonly hostCount: number;
  /** Each host's retries (none for a host not listed). */
  readonly retries: readonly RetryPolicy[];
  /** Retries made of the current host. */
  retried: number;
  /** Times the current host was called again at once with another credential of its pool (`other_credential`). */
  switched: number;
  /** After `retry_host`: how long to wait before calling the host again. */
  retryDelayMs: number;
  /**
   * The last failure of a host that was called (not skipped): what a request whose last host was
   * skipped (its circuit open) ended with, if an earlier one failed for real.
   */
  failure: HostError | null;
  /** `ready` has been forwarded (it is, once, whichever host sent it). */
  ready: boolean;
  /** Text, reasoning or a tool call has been forwarded: no fallback now, and a cut bills what was delivered. */
  produced: boolean;
  /** Characters of text, reasoning and tool calls forwarded (and, once the client has left, read). */
  deliveredChars: number;
  /** The client has left and the host is read on for its count: nothing is forwarded, nothing retried. */
  clientGone: boolean;
  /** Usage as the host serving has reported it so far, if it has. */
  usage: Usage | null;
  /** The serving host's own id for its reply, once it has said it. */
  upstreamId: string | null;
  /** How the request ended, once it has. */
  ending: Ending | null;
}

export const initialAttempt = (hostCount: number, retries: readonly RetryPolicy[] = []): AttemptState => ({
  hostIndex: 0,
  hostCount,
  retries,
  retried: 0,
  switched: 0,
  retryDelayMs: 0,
  failure: null,
  ready: false,
  produced: false,
  deliveredChars: 0,
  clientGone: false,
  usage: null,
  upstreamId: null,
  ending: null,
});

const COMPLETE: Ending = { kind: 'complete' };
const TIMEOUT: Ending = { kind: 'timeout' };
const ABORTED: Ending = { kind: 'abort' };
const READ_TO_END: Ending = { kind: 'abort', readToEnd: true };
const SHUT_DOWN: Ending = { kind: 'shutdown' };

/** One step of the attempt: a host event, or a signal (a host's failure or completion, the deadline, an abort, the shutdown). */
export function attemptStep(state: AttemptState, input: CanonicalEvent): EventAction;
export function attemptStep(state: AttemptState, input: AttemptSignal): SignalAction;
export function attemptStep(state: AttemptState, input: AttemptInput): EventAction | SignalAction;
export function attemptStep(state: AttemptState, input: AttemptInput): EventAction | SignalAction {
  if (state.ending !== null) return 'ignore';
  // Once the client has left, the host's events are only counted.
  const forward = state.clientGone ? 'skip' : 'forward';
  switch (input.type) {
    case 'ready':
      if (state.ready) return 'skip';
      state.ready = true;
      return forward;
    case 'text':
    case 'reasoning':
      state.produced = true;
      state.deliveredChars += input.text.length;
      return forward;
    case 'tool_call':
      state.produced = true;
      state.deliveredChars += input.argumentsDelta.length + (input.name?.length ?? 0);
      return forward;
    case 'usage':
      state.usage = input.usage;
      return forward;
    case 'upstream_id':
      state.upstreamId = input.id;
      return 'skip';
    case 'finish':
    case 'citation':
    case 'pass_through':
      return forward;
    case 'host_failed': {
      const { error } = input;
      // Nobody to serve: what was delivered is billed, as a cut would have been.
      if (state.clientGone) return end(state, ABORTED);
      if (error.kind !== 'circuit_open') state.failure = error;
      if (state.produced) return end(state, { kind: 'failed', error });
      // What the failed call counted is not the next one's to bill, nor its reply's id the served one's.
      state.usage = null;
      state.upstreamId = null;
      // The credential's quota or key, not the host: another credential of its pool, at once.
      if (input.anotherCredential) {
        state.switched += 1;
        return 'other_credential';
      }
      const policy = state.retries[state.hostIndex];
      const again = policy ? retryDecision(policy, error, state.retried, input.msLeft, input.random) : null;
      if (again?.retry) {
        state.retried += 1;
        state.retryDelayMs = again.delayMs;
        return 'retry_host';
      }
      if (error.retryable && state.hostIndex < state.hostCount - 1) {
        state.hostIndex += 1;
        state.retried = 0;
        state.switched = 0;
        return 'next_host';
      }
      // Every host skipped or failed: a real failure says more than the last host's open circuit.
      return end(state, { kind: 'failed', error: error.kind === 'circuit_open' ? (state.failure ?? error) : error });
    }
    case 'host_complete':
      return end(state, state.clientGone ? READ_TO_END : COMPLETE);
    case 'deadline':
      return end(state, state.clientGone ? ABORTED : TIMEOUT);
    case 'abort':
      // Told again (the response's close, then the unsubscription): the client has already left.
      if (state.clientGone) return 'ignore';
      if (input.readOn === true) {
        state.clientGone = true;
        return 'read_on';
      }
      return end(state, ABORTED);
    case 'shutdown':
      return end(state, state.clientGone ? ABORTED : SHUT_DOWN);
  }
}

function end(state: AttemptState, ending: Ending): 'end' {
  state.ending = ending;
  return 'end';
}
