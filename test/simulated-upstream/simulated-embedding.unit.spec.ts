import { simulatedEmbedding } from '../../src/simulated-upstream/simulated-upstream';

describe('the simulated host’s embeddings', () => {
  it('are deterministic: the same input embeds the same, another input differently', () => {
    expect(simulatedEmbedding('hello', 16)).toEqual(simulatedEmbedding('hello', 16));
    expect(simulatedEmbedding('hello', 16)).not.toEqual(simulatedEmbedding('hullo', 16));
    expect(simulatedEmbedding([1, 2], 16)).not.toEqual(simulatedEmbedding('1,2', 16));
  });

  it('have the length asked for and unit norm', () => {
    for (const dimensions of [1, 3, 256, 1536]) {
      const vector = simulatedEmbedding('some text', dimensions);
      expect(vector).toHaveLength(dimensions);
      expect(Math.hypot(...vector)).toBeCloseTo(1, 5);
    }
  });
});
