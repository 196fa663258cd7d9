import { Command } from '@nestjs/cqrs';
import type { CatalogueModel } from '../catalogue/catalogue';
import type { Billed } from '../inference/inference.command';
import type { RequestFacts } from '../observability/request-facts';

export interface EmbeddingsInput {
  /** The API key secret as the client sent it (the surface has refused a request without one). */
  apiKey: string;
  /** A catalogue slug or UUID. */
  model: string;
  /** The client's body, checked by the surface: forwarded whole, only the model renamed to the host's. */
  body: Record<string, unknown> & { input: EmbeddingsInputValue };
  requestId: string;
  /** The request's log facts, filled in by the billed-request shell (absent: not logged). */
  facts?: RequestFacts;
}

/** What may be embedded: a string, strings, a token array, or token arrays. */
export type EmbeddingsInputValue = string | string[] | number[] | number[][];

export interface EmbeddingsResult {
  model: CatalogueModel;
  /** The host's reply, whole, as it answered it (checked to be an embeddings list). */
  reply: Record<string, unknown>;
  /** What was charged, as settled in the ledger. */
  billed: Billed;
  /** Headers the answer carries (a key's rate limits). */
  headers?: Record<string, string>;
}

/** Embeds the input on the model's hosts (the next one when one fails), billed like any request. */
export class EmbeddingsCommand extends Command<EmbeddingsResult> {
  constructor(readonly input: EmbeddingsInput) {
    super();
  }
}
