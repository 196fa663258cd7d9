import { ReadModelOrigin, trustReadModels, TrustFacts } from '../../src/projections/read-model-trust';

describe('trusting read models: of this log, never past where it is', () => {
  const log: TrustFacts = { logId: 'log-b', head: 40, applied: 0 };
  const origin = (o: Partial<ReadModelOrigin> = {}): ReadModelOrigin => ({
    logId: 'log-b',
    position: 40,
    ofThisVersion: true,
    ...o,
  });
  const rebuild = (reason: string) => ({ trust: false, reason });

  it('trusts read models of this log at or behind its head (the log catches them up)', () => {
    expect(trustReadModels(origin(), log)).toEqual({ trust: true });
    expect(trustReadModels(origin({ position: 12 }), log)).toEqual({ trust: true });
    expect(trustReadModels(origin({ position: 0 }), { ...log, head: 0 })).toEqual({ trust: true });
  });

  it('builds them when there are none', () => {
    expect(trustReadModels(null, log)).toEqual(rebuild('there are no read models'));
    expect(trustReadModels(null, { ...log, head: 0 })).toEqual(rebuild('there are no read models'));
  });

  it('rebuilds those of another version of the service', () => {
    expect(trustReadModels(origin({ ofThisVersion: false }), log)).toEqual(
      rebuild('the read models are of another version of the service'),
    );
  });

  it("names what it judges in its reasons (the alert follower's saved state)", () => {
    const savedState = { name: 'saved state', are: 'is' } as const;
    expect(trustReadModels(null, log, savedState)).toEqual(rebuild('there is no saved state'));
    expect(trustReadModels(origin({ logId: 'log-a' }), log, savedState)).toEqual(
      rebuild('the saved state is of another log (log-a; this log is log-b)'),
    );
  });

  it('rebuilds those of another log (a fresh DATA_DIR beside an old Redis), wherever their checkpoint is', () => {
    expect(trustReadModels(origin({ logId: 'log-a', position: 98 }), log)).toEqual(
      rebuild('the read models are of another log (log-a; this log is log-b)'),
    );
    expect(trustReadModels(origin({ logId: 'log-a', position: 3 }), log)).toEqual(
      rebuild('the read models are of another log (log-a; this log is log-b)'),
    );
  });

  it('rebuilds those that record no log (made before logs had an identity)', () => {
    expect(trustReadModels(origin({ logId: null }), log)).toEqual(
      rebuild('the read models are of another log (none recorded; this log is log-b)'),
    );
  });

  it('rebuilds those whose checkpoint is past the head of their own log (restored from an older backup)', () => {
    expect(trustReadModels(origin({ position: 98 }), log)).toEqual(rebuild("checkpoint 98 is past the log's head 40"));
  });

  it('rebuilds those ending with an event the log does not hold at their checkpoint (restored, then written again)', () => {
    const last = { streamId: 'credits-1', revision: 3 };
    expect(trustReadModels(origin({ last }), { ...log, atCheckpoint: last })).toEqual({ trust: true });
    const reason = 'the log holds another event at checkpoint 40 than the last one in the read models';
    expect(trustReadModels(origin({ last }), { ...log, atCheckpoint: { streamId: 'credits-2', revision: 0 } })).toEqual(
      rebuild(reason),
    );
    expect(trustReadModels(origin({ last }), { ...log, atCheckpoint: { ...last, revision: 4 } })).toEqual(rebuild(reason));
    expect(trustReadModels(origin({ last }), { ...log, atCheckpoint: null })).toEqual(rebuild(reason));
  });

  it('rebuilds those behind what this process had applied to them (their store came back from an older save)', () => {
    expect(trustReadModels(origin({ position: 30 }), { ...log, applied: 35 })).toEqual(
      rebuild('checkpoint 30 is behind the 35 applied here before (their store lost what followed)'),
    );
    expect(trustReadModels(origin({ position: 36 }), { ...log, applied: 35 })).toEqual({ trust: true });
  });
});
