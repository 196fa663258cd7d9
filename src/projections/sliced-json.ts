import { setImmediate as nextTurn } from 'node:timers/promises';

/**
 * A large snapshot's JSON built in pieces between requests: entries are serialized `sliceSize` at a
 * time, with a turn of the event loop once `sliceSize` entries have been written since the last, so
 * a save never holds requests up for its whole serialization, nor builds one string of it all.
 */
export class SlicedJson {
  readonly pieces: string[] = [];
  private sinceTurn = 0;

  constructor(
    private readonly sliceSize: number,
    private readonly pause: () => Promise<unknown> = nextTurn,
  ) {}

  push(text: string): void {
    this.pieces.push(text);
  }

  /** The JSON of `entries`' items, comma-separated, without the brackets around them. */
  async pushEntries(entries: readonly unknown[]): Promise<void> {
    for (let start = 0; start < entries.length; start += this.sliceSize) {
      this.pieces.push(`${start > 0 ? ',' : ''}${JSON.stringify(entries.slice(start, start + this.sliceSize)).slice(1, -1)}`);
      this.sinceTurn += Math.min(this.sliceSize, entries.length - start);
      if (this.sinceTurn >= this.sliceSize) {
        this.sinceTurn = 0;
        await this.pause();
      }
    }
  }
}
