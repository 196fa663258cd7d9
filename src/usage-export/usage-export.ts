import { Inject, Injectable } from '@nestjs/common';
import type { EventStore } from '../eventstore/event-store';
import { ledgerBatches } from '../ledger/ledger-chain';
import type { ReservationSettled } from '../ledger/ledger.events';
import type { ReadModels } from '../projections/read-models';
import { EVENTS, READ_MODELS } from '../runtime/runtime.module';
import {
  type CreditNote,
  creditNoteLine,
  type FocusAsk,
  focusCsv,
  focusRows,
  type FocusLine,
  inRange,
  settlementLine,
} from './focus';

const BATCH = 5_000;

/** The export, and the ledger position it was read up to (every event up to it is in it). */
export interface FocusExport {
  csv: string;
  position: number;
}

/**
 * The usage export's shell: reads an organization's settlements and credit notes from the event
 * log — the truth, not a read model, so the export reconciles with the ledger to the nano-credit
 * however long ago a request was — up to the head when asked, and writes them in the FOCUS columns.
 */
@Injectable()
export class UsageExport {
  constructor(
    @Inject(EVENTS) private readonly events: EventStore,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  async focus(orgId: string, ask: FocusAsk): Promise<FocusExport> {
    const [head, organization, keys] = await Promise.all([
      this.events.headPosition(),
      this.readModels.organization(orgId),
      this.readModels.keysOf(orgId),
    ]);
    const settled = new Map<string, FocusLine>();
    const lines: FocusLine[] = [];
    for await (const batch of ledgerBatches(this.events, orgId, head, BATCH)) {
      for (const event of batch) {
        const data = event.data as { orgId?: unknown };
        if (data.orgId !== orgId) continue;
        if (event.type === 'ReservationSettled') {
          const line = settlementLine((event as unknown as ReservationSettled).data);
          settled.set(line.reservationId, line);
          if (inRange(line, ask)) lines.push(line);
        } else if (event.type === 'CreditNoteIssued') {
          const note = event.data as CreditNote;
          const line = creditNoteLine(note, note.reservationId === null ? undefined : settled.get(note.reservationId));
          if (inRange(line, ask)) lines.push(line);
        }
      }
    }
    const account = {
      orgId,
      name: organization?.name ?? '',
      keyNames: new Map(keys.map((k) => [k.keyId, k.name])),
    };
    return { csv: focusCsv(focusRows(lines, account, ask.grouping)), position: head };
  }
}
