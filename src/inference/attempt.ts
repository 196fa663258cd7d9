import type { CanonicalEvent, HostError, Usage } from '../canonical/canonical';

/**
 * The attempt: calling a model's hosts in turn (the next one while nothing was produced and the
 * failure was the host's), under one deadline, until exactly one ending. A state machine the
 * shell feeds: each step updates the state the shell owns and says what to do next. Streamed
 * events only move counters (no copy of the state per token).
 */

/** How a request ended: exactly one per request. */
export type Ending =
  | { readonly kind: 'complete' }
  | { readonly kind: 'abort' }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'failed'; readonly error: HostError };

/** What the attempt hears besides the host's own events. */
export type AttemptSignal =
  | { readonly type: 'host_failed'; readonly error: HostError }
  | { readonly type: 'host_complete' }
  | { readonly type: 'deadline' }
  | { readonly type: 'abort' };

export type AttemptInput = CanonicalEvent | AttemptSignal;

export const HOST_COMPLETE: AttemptSignal = { type: 'host_complete' };
export const DEADLINE: AttemptSignal = { type: 'deadline' };
export const ABORT: AttemptSignal = { type: 'abort' };
export const hostFailed = (error: HostError): AttemptSignal => ({ type: 'host_failed', error });

/**
 * What to do after a step. A host event is forwarded to the client, or skipped (a second
 * `ready`, from a fallback host); a signal moves on to the next host or ends the request
 * (`state.ending` says how). Anything after the ending is ignored.
 */
export type EventAction = 'forward' | 'skip' | 'ignore';
export type SignalAction = 'next_host' | 'end' | 'ignore';

export interface AttemptState {
  /** The host being called: an index into the admitted hosts. */
  hostIndex: number;
  readonly hostCount: number;
  /** `ready` has been forwarded (it is, once, whichever host sent it). */
  ready: boolean;
  /** Text, reasoning or a tool call has been forwarded: no fallback now, and a cut bills what was delivered. */
  produced: boolean;
  /** Characters of text, reasoning and tool calls forwarded. */
  deliveredChars: number;
  /** Usage as the host serving has reported it so far, if it has. */
  usage: Usage | null;
  /** The serving host's own id for its reply, once it has said it. */
  upstreamId: string | null;
  /** How the request ended, once it has. */
  ending: Ending | null;
}

export const initialAttempt = (hostCount: number): AttemptState => ({
  hostIndex: 0,
  hostCount,
  ready: false,
  produced: false,
  deliveredChars: 0,
  usage: null,
  upstreamId: null,
  ending: null,
});

const COMPLETE: Ending = { kind: 'complete' };
const TIMEOUT: Ending = { kind: 'timeout' };
const ABORTED: Ending = { kind: 'abort' };

/** One step of the attempt: a host event, or a signal (a host's failure or completion, the deadline, an abort). */
export function attemptStep(state: AttemptState, input: CanonicalEvent): EventAction;
export function attemptStep(state: AttemptState, input: AttemptSignal): SignalAction;
export function attemptStep(state: AttemptState, input: AttemptInput): EventAction | SignalAction;
export function attemptStep(state: AttemptState, input: AttemptInput): EventAction | SignalAction {
  if (state.ending !== null) return 'ignore';
  switch (input.type) {
    case 'ready':
      if (state.ready) return 'skip';
      state.ready = true;
      return 'forward';
    case 'text':
    case 'reasoning':
      state.produced = true;
      state.deliveredChars += input.text.length;
      return 'forward';
    case 'tool_call':
      state.produced = true;
      state.deliveredChars += input.argumentsDelta.length + (input.name?.length ?? 0);
      return 'forward';
    case 'usage':
      state.usage = input.usage;
      return 'forward';
    case 'upstream_id':
      state.upstreamId = input.id;
      return 'skip';
    case 'finish':
    case 'citation':
    case 'pass_through':
      return 'forward';
    case 'host_failed':
      if (!state.produced && input.error.retryable && state.hostIndex < state.hostCount - 1) {
        state.hostIndex += 1;
        // What the failed host counted is not the next one's to bill, nor its reply's id the served one's.
        state.usage = null;
        state.upstreamId = null;
        return 'next_host';
      }
      return end(state, { kind: 'failed', error: input.error });
    case 'host_complete':
      return end(state, COMPLETE);
    case 'deadline':
      return end(state, TIMEOUT);
    case 'abort':
      return end(state, ABORTED);
  }
}

function end(state: AttemptState, ending: Ending): 'end' {
  state.ending = ending;
  return 'end';
}
