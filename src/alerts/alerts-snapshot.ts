import { readFile } from 'node:fs/promises';
import type { EventStore } from '../eventstore/event-store';
import { type EventAt, judgeAgainstLog } from '../projections/read-model-trust';
import { SlicedJson } from '../projections/sliced-json';
import { removeStaleSideFiles, writeAside } from '../projections/snapshot-file';
import { type AlertsState, alertsStateOf, type SavedAlertsState, savedAlertsState } from './alerts.decisions';

/**
 * The alert follower's state saved with its checkpoint, so that a start folds only the events after
 * it instead of the whole log. Kept in the instance's data directory, like the in-process read models'
 * copy, and trusted on the same terms (read-model-trust.ts): of this log, whose event at the checkpoint
 * is the one it ends with. Deleting it only costs a fold of the whole log at the next start.
 */

/**
 * Bump it whenever evolveAlerts or its state changes what a saved state means (a field, an event it
 * follows): a copy of another version is ignored and the log folded from its start. 2: a refund comes off a
 * key's spend only under a limit that never resets (version 1 took it off every period's).
 */
const VERSION = 2;

/** How far the follower has applied the log: the position and the event there. */
export interface AlertsCheckpoint {
  position: number;
  last: EventAt;
}

/** The file's content. */
export interface AlertsSnapshot extends AlertsCheckpoint, SavedAlertsState {
  version: number;
  /** The identity of the log it was folded from. */
  logId: string;
}

/**
 * The snapshot's JSON text in pieces, its entries a slice at a time between turns of the event loop
 * (SlicedJson, as the read models'). Its entries share the follower's objects: it applies no event
 * until this resolves.
 */
export async function alertsSnapshotPieces(
  snapshot: AlertsSnapshot,
  sliceSize = 1000,
  pause?: () => Promise<unknown>,
): Promise<string[]> {
  const { orgs, keys, pending, ...rest } = snapshot;
  const json = new SlicedJson(sliceSize, pause);
  json.push(JSON.stringify(rest).slice(0, -1));
  for (const [name, entries] of Object.entries({ orgs, keys, pending })) {
    json.push(`,"${name}":[`);
    await json.pushEntries(entries);
    json.push(']');
  }
  json.push('}');
  return json.pieces;
}

/** What a start needs of a file before the log is asked about it (what a partial or damaged one lacks). */
function wellFormed(saved: unknown): saved is AlertsSnapshot {
  const s = saved as Partial<AlertsSnapshot> | null;
  return (
    typeof s === 'object' &&
    s !== null &&
    typeof s.logId === 'string' &&
    Number.isSafeInteger(s.position) &&
    s.position! > 0 &&
    typeof s.last?.streamId === 'string' &&
    Number.isSafeInteger(s.last.revision) &&
    [s.orgs, s.keys, s.pending].every(Array.isArray)
  );
}

/** The follower's saved state: loaded at start, saved every `everyMs` while it moves on, and on stop. */
export class AlertsSnapshotFile {
  /** The checkpoint of the last save (or of the copy loaded). */
  private saved = 0;
  private savedTime = Date.now();
  /** The write in flight: one at a time. */
  private writing: Promise<void> | null = null;

  constructor(
    private readonly file: string,
    private readonly logId: string,
    private readonly everyMs: number,
    private readonly log: (line: string) => void,
  ) {}

  /** The saved state and its checkpoint when they may be trusted on the log as it is now; else null, saying why (nothing when there is no file). */
  async load(events: EventStore): Promise<{ state: AlertsState; checkpoint: AlertsCheckpoint } | null> {
    const ignored = (reason: string) => {
      this.log(`alerts: the saved state ${this.file} is not used (${reason}): folding the log from its start`);
      return null;
    };
    await removeStaleSideFiles(this.file, this.log);
    let saved: unknown;
    try {
      saved = JSON.parse(await readFile(this.file, 'utf8'));
    } catch (error) {
      return (error as NodeJS.ErrnoException).code === 'ENOENT' ? null : ignored((error as Error).message);
    }
    if (!wellFormed(saved)) return ignored('incomplete');
    const { logId, position, last, version } = saved;
    const origin = { logId, position, last, ofThisVersion: version === VERSION };
    const verdict = await judgeAgainstLog(events, origin, 0, { name: 'saved state', are: 'is' });
    if (!verdict.trust) return ignored(verdict.reason);
    this.saved = position;
    return { state: alertsStateOf(saved), checkpoint: { position, last } };
  }

  /**
   * Once `everyMs` has passed since the last save: the state serialized now, in slices (the caller
   * applies no event until this resolves), and written in the background. Not while a write is in flight.
   */
  async saveIfDue(state: AlertsState, checkpoint: AlertsCheckpoint): Promise<void> {
    if (this.writing || checkpoint.position === this.saved || Date.now() - this.savedTime < this.everyMs) return;
    this.savedTime = Date.now();
    const pieces = await this.pieces(state, checkpoint);
    this.writing = this.write(pieces, checkpoint.position).finally(() => (this.writing = null));
  }

  /** On stop: the state as it is, after the write in flight. */
  async save(state: AlertsState, checkpoint: AlertsCheckpoint): Promise<void> {
    await this.writing;
    if (checkpoint.position === this.saved) return;
    await this.write(await this.pieces(state, checkpoint), checkpoint.position);
  }

  private pieces(state: AlertsState, checkpoint: AlertsCheckpoint): Promise<string[]> {
    return alertsSnapshotPieces({ version: VERSION, logId: this.logId, ...checkpoint, ...savedAlertsState(state) });
  }

  /** A write that fails (a full disk) leaves the last save; delivery goes on, only the next start is longer. */
  private async write(pieces: string[], position: number): Promise<void> {
    try {
      await writeAside(this.file, pieces);
      this.saved = position;
    } catch (error) {
      this.log(`alerts: state not saved (${(error as Error).message}): the next start folds the log from the last save`);
    }
  }
}
