import { startSimulatedUpstream, SimulatedUpstream } from '../../src/simulated-upstream/simulated-upstream';
import { sseEvents } from '../support/surfaces';

/** The simulated host honours structured output as a real chat-completions host does: the reply is JSON. */
describe('the simulated host asked for JSON', () => {
  let sim: SimulatedUpstream;
  beforeAll(async () => {
    sim = await startSimulatedUpstream({ port: 0, firstTokenMs: 0, tokensPerSecond: 0 });
  });
  afterAll(() => sim.close());

  const complete = (body: Record<string, unknown>) =>
    fetch(`${sim.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim', messages: [{ role: 'user', content: 'Name an animal' }], ...body }),
    });
  const schema = {
    type: 'object',
    properties: { name: { type: 'string' }, legs: { type: 'integer' }, kind: { enum: ['cat', 'dog'] } },
  };

  it('answers an instance of a json_schema, whole and streamed', async () => {
    const format = { type: 'json_schema', json_schema: { name: 'animal', schema } };
    const whole = (await (await complete({ response_format: format })).json()) as any;
    const value = JSON.parse(whole.choices[0].message.content);
    expect(value).toEqual({ name: expect.stringContaining('Name an animal'), legs: 1, kind: 'cat' });
    const streamed = await (await complete({ response_format: format, stream: true })).text();
    const text = sseEvents(streamed)
      .filter((e) => e.data !== '[DONE]')
      .map((e) => e.data.choices[0]?.delta?.content ?? '')
      .join('');
    expect(JSON.parse(text)).toEqual(value);
  });

  it('answers a JSON object in JSON mode, and text otherwise', async () => {
    const mode = (await (await complete({ response_format: { type: 'json_object' } })).json()) as any;
    expect(JSON.parse(mode.choices[0].message.content)).toEqual({ reply: expect.stringContaining('You said') });
    const text = (await (await complete({})).json()) as any;
    expect(text.choices[0].message.content).toMatch(/^You said: Name an animal\./);
  });
});
