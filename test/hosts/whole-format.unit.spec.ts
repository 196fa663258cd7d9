import { HOST_KINDS } from '../../src/hosts/hosts';

// Which clients' bodies each kind sends whole (HostKind.wholeFormat): what a body carries without a
// translation (the messages format's client-run tools) reaches only these hosts.
describe('the format each kind takes whole', () => {
  it.each([
    ['anthropic', 'claude-sonnet-4-5', {}, 'messages'],
    ['openai', 'gpt-4o-mini', {}, 'chat-completions'],
    ['openai-responses', 'gpt-5', {}, 'responses'],
    ['azure', 'my-deployment', { api: 'chat-completions' }, 'chat-completions'],
    ['azure', 'my-deployment', { api: 'responses' }, 'responses'],
    ['vertex', 'claude-sonnet-4-5@20250929', { publisher: 'auto' }, 'messages'],
    ['vertex', 'gemini-2.5-pro', { publisher: 'auto' }, null],
    ['vertex', 'my-tuned-claude', { publisher: 'anthropic' }, 'messages'],
    ['gemini', 'gemini-2.5-pro', {}, null],
    ['bedrock', 'anthropic.claude-sonnet-4-5-v1:0', { api: 'converse' }, null],
    ['bedrock', 'anthropic.claude-sonnet-4-5-v1:0', { api: 'invoke' }, 'messages'],
  ] as const)('%s, %s %j: %s', (kind, hostModel, settings, format) => {
    expect(HOST_KINDS[kind].wholeFormat?.(hostModel, settings) ?? null).toBe(format);
  });
});
