import type { ReservationReleased, ReservationSettled } from '../../src/ledger/ledger.events';
import type { TestGateway } from './gateway';
import { Asked, callSurface, postToSurface, Surface } from './surfaces';

/** How the ledger ended a request: its settlement, or the release of what it held. */
export type Ending =
  | { type: 'ReservationSettled'; data: ReservationSettled['data'] }
  | { type: 'ReservationReleased'; data: ReservationReleased['data'] };

/**
 * What a spec's tests do through the gateway they share, reached through `gateway` (the spec starts
 * it in its beforeAll): call a surface, post a request of their own, see what a host was last sent,
 * and find how the ledger ended a request.
 */
export function throughGateway(gateway: () => TestGateway) {
  /** The ledger's ending of the request a response names, once the request is logged and nothing is held any more. */
  async function endingOf(res: Response): Promise<Ending> {
    const g = gateway();
    const requestId = res.headers.get('x-request-id')!;
    await g.logged(requestId);
    await g.settled();
    const log = await g.t.runtime.events.readAll(0, 100_000);
    const ending = log.find(
      (e) =>
        (e.type === 'ReservationSettled' || e.type === 'ReservationReleased') &&
        (e.data as { requestId: string }).requestId === requestId,
    );
    return ending as Ending;
  }

  return {
    gateway,

    /** A surface's own request for `slug` (see Surface.body), with the gateway's key; its answer read whole. */
    call: (surface: Surface<string>, slug: string, stream: boolean, asked: Asked = {}) =>
      callSurface(gateway().baseUrl, gateway().key, surface, slug, stream, asked),

    /** A request body of the test's own, on a surface's route for `slug`; its answer read whole. */
    send: (surface: Surface<string>, slug: string, stream: boolean, body: unknown) =>
      postToSurface(gateway().baseUrl, gateway().key, surface, slug, stream, body),

    /** POST `body` to `route` (below /api/v1), with `key` (the gateway's unless given) as every format sends it. */
    post: (route: string, body: unknown, key = gateway().key) =>
      fetch(`${gateway().baseUrl}/api/v1/${route}`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          authorization: `Bearer ${key}`,
          'x-api-key': key,
          'anthropic-version': '2023-06-01',
        },
        body: JSON.stringify(body),
      }),

    /** The last request the fake received for a host model (named in its path, else in its body). */
    sent: (hostModel: string) =>
      gateway()
        .fake.requests.filter((r) => (r.model ?? r.body?.model) === hostModel)
        .at(-1)!,

    endingOf,

    /** The settlement of the request a response names (the ledger having settled it, not released it). */
    settlementOf: async (res: Response): Promise<ReservationSettled['data']> => {
      const ending = await endingOf(res);
      expect(ending?.type).toBe('ReservationSettled');
      return ending.data as ReservationSettled['data'];
    },
  };
}
