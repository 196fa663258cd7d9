import type { FakeUpstream } from './fake-upstream';
import { eventually } from './processes';

/**
 * Sends `total` requests at once against a balance that covers only some of them, the host holding
 * every reply for `hostModel` until each request has either reached it or been answered otherwise
 * (refused). No settlement can free credit while the others are still being decided, however slow
 * the machine: a host answering after a fixed delay let a late request be admitted on credit an
 * earlier one had already given back. A request admitted beyond the credit still reaches the host,
 * so an overdraw shows as more admitted than the credit covers. Resolves with every answer.
 */
export async function raceForCredit<T extends { status: number }>(
  fake: FakeUpstream,
  hostModel: string,
  total: number,
  send: (i: number) => Promise<T>,
  // Under jest's own 60 s, so a race that never quiets fails with this helper's message.
  timeoutMs = 45_000,
): Promise<T[]> {
  const forModel = () => fake.requests.filter((r) => (r.model ?? r.body?.model) === hostModel).length;
  const before = forModel();
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  fake.on(hostModel, { kind: 'reply', reply: { text: 'Hello.' }, released });
  let answered = 0;
  const answers = Promise.all(
    Array.from({ length: total }, (_, i) =>
      send(i).then((answer) => {
        answered++;
        return answer;
      }),
    ),
  );
  // Observed now: a request failing while the race is not yet quiet is reported when the answers are awaited.
  answers.catch(() => undefined);
  try {
    // Quiet: nothing admitted has been answered yet, so every answer so far is a refusal.
    await eventually(() => answered + forModel() - before >= total, timeoutMs);
  } finally {
    release();
    fake.on(hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
  }
  return answers;
}
