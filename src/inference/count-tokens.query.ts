import { Query } from '@nestjs/cqrs';
import type { CanonicalRequest } from '../canonical/canonical';

export interface CountTokensInput {
  /** The API key secret as the client sent it. */
  apiKey: string;
  /** A catalogue slug or UUID. */
  model: string;
  /**
   * The client's body in the messages format: hosts that count are sent it whole, on their model.
   * Null for a client of another format (Gemini's countTokens): no host counts it, the estimate answers.
   */
  body: Record<string, unknown> | null;
  /** The same request in canonical form: its betas, and what the gateway estimates when no host counts. */
  request: CanonicalRequest;
}

export interface TokenCount {
  inputTokens: number;
  /** The counting host's answer, whole (it may say more than the count); null for the gateway's estimate. */
  counted: Record<string, unknown> | null;
}

/** The input tokens of a request, counted without running it: authenticated, never reserved nor billed. */
export class CountTokensQuery extends Query<TokenCount> {
  constructor(readonly input: CountTokensInput) {
    super();
  }
}
