import { Injectable, Logger } from '@nestjs/common';
import type { ApiError } from '../http/api-error';
import { maskSecrets } from '../key-secret/key-secret';
import { LedgerService, Resolution } from '../ledger/ledger.service';
import { Projector } from '../projections/projector';
import type { SurfaceName } from './inference.command';
import { RefusalBudget } from './refusal-budget';

/** Refused requests recorded per organization and second, per instance (see RefusalBudget). */
const REFUSALS_RECORDED_PER_SECOND = 20;

/** Longest a reply waits, after its settlement is in the log, for the read models to show it. */
const READ_MODELS_WAIT_MS = 2_000;

/** A request as the ledger knows it before it is admitted. */
export interface RequestOfKey {
  requestId: string;
  surface: SurfaceName;
  orgId: string;
  keyId: string;
}

/**
 * What the billed-request shell records beside a request's own work: a refusal in the request log,
 * within one budget per organization across every use case; and a resolved reservation awaited in
 * the read models, so a reply ends once a balance read shows it.
 */
@Injectable()
export class RequestRecord {
  private readonly logger = new Logger('Ledger');
  private readonly refusals = new RefusalBudget(REFUSALS_RECORDED_PER_SECOND);

  constructor(
    private readonly ledger: LedgerService,
    private readonly projector: Projector,
  ) {}

  /** A known organization's request turned away: its request log shows it (within the budget). Returns the error to answer. */
  refused(request: RequestOfKey, model: string, error: ApiError, started: number): ApiError {
    if (!this.refusals.take(request.orgId, Date.now())) return error;
    this.ledger
      .refuse({
        ...request,
        // What the client sent, as the log keeps it: a secret pasted into the model is masked.
        model: maskSecrets(model),
        status: error.outcome,
        reason: maskSecrets(error.message),
        latencyMs: Math.round(performance.now() - started),
      })
      .catch((e: Error) => this.logger.error(`refusal of ${request.requestId} not recorded: ${e.message}`));
    return error;
  }

  /** Waits (within a bound: a lagging read model delays no reply longer) until the read models show a resolved reservation. */
  async shown(resolution: Resolution, requestId: string): Promise<void> {
    await this.projector
      .waitFor(resolution.position, READ_MODELS_WAIT_MS)
      .catch((error: Error) => this.logger.warn(`${requestId} answered before the read models show it: ${error.message}`));
  }
}
