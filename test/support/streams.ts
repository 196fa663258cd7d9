import { TEST_MODELS } from './gateway';

/**
 * POST /api/v1/chat/completions on `base` with `secret`: a user's "Hi" to the test GPT model, the
 * body's other fields (and any model) from `body`, extra headers or a signal from `init`.
 */
export function chatCompletion(
  base: string,
  secret: string,
  body: Record<string, unknown> = {},
  init: { headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    signal: init.signal,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}`, ...init.headers },
    body: JSON.stringify({ model: TEST_MODELS.gpt.slug, messages: [{ role: 'user', content: 'Hi' }], ...body }),
  });
}

/**
 * A chat-completions stream of `model` asking to count, opened with `secret`: resolves once its first
 * word has arrived. `ended` says how it ended: `completed` (with `data: [DONE]`) or `cut`; `body`, what
 * had arrived (once ended: all of it).
 */
export async function openCountingStream(base: string, secret: string, model: string) {
  const res = await chatCompletion(base, secret, { model, stream: true, messages: [{ role: 'user', content: 'Count' }] });
  const reader = res.body!.getReader();
  let seen = '';
  let firstText: () => void = () => {};
  const started = new Promise<void>((resolve) => (firstText = resolve));
  const ended = (async (): Promise<'completed' | 'cut'> => {
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return seen.includes('data: [DONE]') ? 'completed' : 'cut';
        seen += new TextDecoder().decode(value);
        if (seen.includes('"content":"one')) firstText();
      }
    } catch {
      return 'cut';
    }
  })();
  await started;
  return { ended, requestId: res.headers.get('x-request-id')!, body: () => seen };
}
