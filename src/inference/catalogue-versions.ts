import type { Catalogue } from '../catalogue/catalogue';
import type { LedgerService } from '../ledger/ledger.service';

/** The catalogue version a request is priced with, and (its first time here) its prices being put in the log. */
export interface PricedWith {
  version: string;
  /** Resolves when the version's prices are in the log (null), or with why they could not be put there. */
  recording: Promise<Error | null> | null;
}

/**
 * Puts each catalogue version's prices in the log (CatalogueLoaded) before the first reservation
 * priced with it, so that `ledger audit` can check settlements against them from the log alone.
 * Once a version is recorded, asking costs a set lookup: no promise per request.
 */
export class CatalogueVersions {
  private readonly recorded = new Set<string>();
  private readonly recording = new Map<string, Promise<Error | null>>();

  constructor(
    private readonly ledger: LedgerService,
    private readonly catalogue: Catalogue,
    private readonly clock: () => number = Date.now,
  ) {}

  /**
   * The running catalogue's version: to be read in the same tick as the request's models are found
   * in it, so both are of one version. Null for a catalogue built in code (no version to record).
   */
  current(): PricedWith | null {
    const loaded = this.catalogue.loaded;
    if (loaded === null) return null;
    const { version } = loaded;
    if (this.recorded.has(version)) return { version, recording: null };
    let recording = this.recording.get(version);
    if (recording === undefined) {
      recording = this.ledger.recordCatalogue({ version, recordedAt: this.clock(), prices: loaded.prices() }).then(
        () => {
          this.recorded.add(version);
          this.recording.delete(version);
          return null;
        },
        // Not recorded (the log refused or did not answer): the next request tries again.
        (error: Error) => {
          this.recording.delete(version);
          return error;
        },
      );
      this.recording.set(version, recording);
    }
    return { version, recording };
  }
}
