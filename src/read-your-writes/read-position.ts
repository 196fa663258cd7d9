import { Inject, Injectable } from '@nestjs/common';
import type { Config } from '../config/config';
import type { EventStore } from '../eventstore/event-store';
import { Projector } from '../projections/projector';
import { CONFIG, EVENTS } from '../runtime/runtime.module';
import { beyondHead, notReached } from './ledger-position';

/**
 * A read route's `min_position`: waits (on the projector's waiters, the ones every reply's
 * settlement waits on; no polling) until the read models include the position, within
 * MIN_POSITION_WAIT_MS, and says which position the answer reflects.
 */
@Injectable()
export class ReadPosition {
  constructor(
    private readonly projector: Projector,
    @Inject(EVENTS) private readonly events: EventStore,
    @Inject(CONFIG) private readonly config: Config,
  ) {}

  /**
   * The position a read made now reflects at least (every event up to it applied), once it is at
   * `asked` or beyond; a 400 for a position past the log's head, a 503 when the bound passes first.
   * Read before the read models are: what they answer next includes at least this much.
   */
  async reach(asked: number | null): Promise<number> {
    const applied = this.projector.position;
    if (asked === null || applied >= asked) return applied;
    const head = await this.events.headPosition();
    if (asked > head) throw beyondHead(asked, head);
    const waitMs = this.config.minPositionWaitMs;
    try {
      await this.projector.waitFor(asked, waitMs);
    } catch {
      throw notReached(asked, this.projector.position, waitMs);
    }
    return this.projector.position;
  }
}
