import { InferenceCommand } from '../../inference/inference.command';
import type { RequestFacts } from '../../observability/request-facts';
import { toCanonicalMessages } from '../../surfaces/native/native.wire';
import type { PlaygroundDto } from './playground.dto';

/** The playground bills the active organization under this pseudo key. */
export const PLAYGROUND_KEY = 'playground';

/**
 * The playground's request as the one inference command: on the active organization (no API
 * key), the conversation translated as the native surface does, always streamed.
 */
export function playgroundInference(
  body: PlaygroundDto,
  orgId: string,
  requestId: string,
  facts?: RequestFacts,
): InferenceCommand {
  return new InferenceCommand({
    surface: 'playground',
    apiKey: null,
    principal: { orgId, keyId: PLAYGROUND_KEY },
    model: body.model,
    request: {
      system: body.system?.trim() ? [body.system] : [],
      messages: toCanonicalMessages(body.messages),
      tools: [],
      maxTokens: body.max_tokens,
      stop: [],
      // The playground always streams, in the native route's events.
      stream: true,
    },
    requestId,
    facts,
  });
}
