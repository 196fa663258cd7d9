/**
 * A chat-completions stream of `model` asking to count, opened with `secret`: resolves once its first
 * word has arrived. `ended` says how it ended: `completed` (with `data: [DONE]`) or `cut`.
 */
export async function openCountingStream(base: string, secret: string, model: string) {
  const res = await fetch(`${base}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
    body: JSON.stringify({ model, stream: true, messages: [{ role: 'user', content: 'Count' }] }),
  });
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
  return { ended, requestId: res.headers.get('x-request-id')! };
}
