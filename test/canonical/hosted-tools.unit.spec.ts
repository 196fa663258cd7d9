import type { HostedToolClass } from '../../src/canonical/canonical';
import {
  carriedToolsOf,
  decideHostedTools,
  hostedToolClassOf,
  isHostedTool,
  runnableTools,
  ServingHost,
  withoutHostedTools,
} from '../../src/canonical/hosted-tools';
import { HOST_KINDS } from '../../src/hosts/hosts';

/** A host of `kind` whose catalogue entry prices `priced` per use. */
const host = (kind: keyof typeof HOST_KINDS, priced: HostedToolClass[] = ['webSearch'], model = 'm'): ServingHost => ({
  runs: HOST_KINDS[kind].hostedTools,
  whole: HOST_KINDS[kind].wholeFormat?.(model, {}) ?? null,
  priced: new Set(priced),
  model,
});

describe('hosted tools: which are carried, which left out, which refused', () => {
  it("knows the hosts' own tools from the client's, in both formats' names", () => {
    for (const type of [
      'web_search',
      'web_search_preview',
      'file_search',
      'code_interpreter',
      'image_generation',
      'mcp',
      'web_search_20250305',
      'web_fetch_20250910',
      'code_execution_20250825',
      'tool_search_tool_regex_20251119',
    ])
      expect(isHostedTool(type)).toBe(true);
    // Run by the client: never left out (the surface carries or refuses them).
    for (const type of [
      'function',
      'namespace',
      'custom',
      'computer_use_preview',
      'local_shell',
      'bash_20250124',
      'text_editor_20250728',
    ])
      expect(isHostedTool(type)).toBe(false);
  });

  it('matches a hosted type whole: a known name followed by anything else is not one (it would reach a reply header)', () => {
    for (const type of [
      'web_search\r\nx-evil: 1',
      'web_search x',
      'web_searchx',
      'web_search_',
      'web_search_Preview',
      'mcp\n',
      `web_search_${'a'.repeat(60)}`,
    ]) {
      expect(isHostedTool(type)).toBe(false);
      expect(hostedToolClassOf(type)).toBeNull();
    }
    expect(isHostedTool('web_search_preview_2025_03_11')).toBe(true);
  });

  it('bills each hosted tool in its class, whatever its version; mcp and tool search have none', () => {
    expect(['web_search', 'web_search_preview', 'web_search_20250305', 'web_search_20260209'].map(hostedToolClassOf)).toEqual(
      Array(4).fill('webSearch'),
    );
    expect(hostedToolClassOf('web_fetch_20250910')).toBe('webFetch');
    expect(hostedToolClassOf('code_interpreter')).toBe('codeExecution');
    expect(hostedToolClassOf('code_execution_20250825')).toBe('codeExecution');
    expect(hostedToolClassOf('file_search')).toBe('fileSearch');
    expect(hostedToolClassOf('image_generation')).toBe('imageGeneration');
    expect(hostedToolClassOf('mcp')).toBeNull();
    expect(hostedToolClassOf('tool_search_tool_regex_20251119')).toBeNull();
  });

  it('a host runs what its kind runs and its entry prices: whole in its own format, web search translated from the others', () => {
    const responses = host('openai-responses', ['webSearch', 'fileSearch']);
    expect([...runnableTools(['web_search', 'file_search', 'image_generation', 'mcp'], 'responses', [responses])]).toEqual([
      'web_search',
      'file_search',
    ]);
    // From the messages format: its web search has a counterpart, its fetch has none.
    expect([...runnableTools(['web_search_20250305', 'web_fetch_20250910'], 'messages', [responses])]).toEqual([
      'web_search_20250305',
    ]);
    const anthropic = host('anthropic', ['webSearch', 'webFetch']);
    expect([...runnableTools(['web_search_20250305', 'web_fetch_20250910'], 'messages', [anthropic])]).toEqual([
      'web_search_20250305',
      'web_fetch_20250910',
    ]);
    expect([...runnableTools(['web_search', 'file_search'], 'responses', [anthropic])]).toEqual(['web_search']);
    // A chat-completions host runs none; nor does a host whose entry gives no per-use price.
    expect(runnableTools(['web_search'], 'chat-completions', [host('openai')]).size).toBe(0);
    expect(runnableTools(['web_search'], 'responses', [host('openai-responses', [])]).size).toBe(0);
  });

  it("knows Gemini's own tools by class, and runs Google Search beside functions only where the model can (Gemini 3, Claude)", () => {
    expect(['googleSearch', 'googleSearchRetrieval', 'urlContext', 'codeExecution', 'fileSearch'].map(hostedToolClassOf)).toEqual(
      ['webSearch', 'webSearch', 'webFetch', 'codeExecution', 'fileSearch'],
    );
    const gemini = (model: string) => host('gemini', ['webSearch'], model);
    for (const format of [undefined, 'responses', 'messages', 'chat-completions'] as const) {
      expect(runnableTools(['googleSearch', 'web_search'], format, [gemini('gemini-2.5-flash')]).size).toBe(2);
      // Gemini 2.5 refuses Google Search beside function declarations: left out when the client offers functions.
      expect(runnableTools(['web_search'], format, [gemini('gemini-2.5-flash')], true).size).toBe(0);
      expect(runnableTools(['web_search'], format, [gemini('gemini-3-pro-preview')], true).size).toBe(1);
    }
    expect(runnableTools(['web_search_20250305'], 'messages', [host('vertex', ['webSearch'], 'gemini-2.5-pro')], true).size).toBe(
      0,
    );
    expect(
      runnableTools(['web_search'], 'responses', [host('vertex', ['webSearch'], 'claude-sonnet-4-5@20250929')], true).size,
    ).toBe(1);
    // Passed whole to Claude on Vertex AI: the server tool beside the client's tools, as on Anthropic's API.
    expect(runnableTools(['web_search_20250305'], 'messages', [host('vertex', ['webSearch'], 'claude-x@1')], true).size).toBe(1);
  });

  it('a tool is carried only when every serving host runs it (a fallback must run it too)', () => {
    expect(runnableTools(['web_search'], 'responses', [host('openai-responses'), host('anthropic')]).size).toBe(1);
    expect(runnableTools(['web_search'], 'responses', [host('openai-responses'), host('openai')]).size).toBe(0);
    expect(runnableTools(['web_search'], 'responses', []).size).toBe(0);
  });

  it('leaves out hosted tools that are only offered, each once, in the order given', () => {
    const none = new Set<string>();
    expect(
      decideHostedTools({ hosted: ['web_search', 'image_generation', 'web_search'], clientTools: true, required: null }, none),
    ).toEqual({ omitted: ['web_search', 'image_generation'], carried: [] });
    // Offered alone, with the choice left to the model: the call goes on without tools.
    expect(decideHostedTools({ hosted: ['web_search'], clientTools: false, required: null }, none)).toEqual({
      omitted: ['web_search'],
      carried: [],
    });
    expect(decideHostedTools({ hosted: [], clientTools: true, required: 'any' }, none)).toEqual({ omitted: [], carried: [] });
  });

  it('refuses a request that requires a hosted tool its hosts do not run, naming it and where it runs', () => {
    const elsewhere = (types: string[]) => `models that run it: openai/gpt-5 (asked: ${types.join(', ')})`;
    expect(
      decideHostedTools({ hosted: ['web_search'], clientTools: true, required: { hosted: 'web_search' } }, new Set(), elsewhere),
    ).toEqual({
      refused:
        'tool_choice requires the hosted tool "web_search", which the hosts of this model do not run (models that run it: openai/gpt-5 (asked: web_search)): offered without being required, it is left out of the call',
    });
  });

  it('refuses "any tool" when the only tools offered are hosted ones its hosts do not run, naming them', () => {
    const decision = decideHostedTools({ hosted: ['web_search', 'file_search'], clientTools: false, required: 'any' }, new Set());
    expect(decision).toEqual({
      refused:
        'tool_choice requires a tool, and the only tools offered are hosted ones ("web_search", "file_search"), which the hosts of this model do not run (no model of this gateway runs it)',
    });
    // With a function of the client's beside them, the model can still call a tool.
    expect(decideHostedTools({ hosted: ['web_search'], clientTools: true, required: 'any' }, new Set())).toEqual({
      omitted: ['web_search'],
      carried: [],
    });
  });

  it('carries the hosted tools a serving host runs, and lets a request require them', () => {
    const runs = new Set(['web_search']);
    const asked = { hosted: ['web_search', 'code_interpreter'], clientTools: false, required: { hosted: 'web_search' } };
    expect(decideHostedTools(asked, runs)).toEqual({ omitted: ['code_interpreter'], carried: ['web_search'] });
    expect(decideHostedTools({ hosted: ['web_search'], clientTools: false, required: 'any' }, runs)).toEqual({
      omitted: [],
      carried: ['web_search'],
    });
    // What a translating host is told: the classes carried, the uses each may make, the one required.
    expect(carriedToolsOf(asked, ['web_search'], 20)).toEqual({ classes: ['webSearch'], maxUses: 20, required: 'webSearch' });
    expect(carriedToolsOf(asked, [], 20)).toBeNull();
  });

  it("takes the tools left out of a client's body, and the tool_choice once none is left", () => {
    const body = {
      model: 'm',
      tools: [{ type: 'web_search' }, { type: 'function', name: 'f' }],
      tool_choice: 'auto',
    };
    expect(withoutHostedTools('responses', body, ['web_search'])).toEqual({
      model: 'm',
      tools: [{ type: 'function', name: 'f' }],
      tool_choice: 'auto',
    });
    expect(withoutHostedTools('responses', { ...body, tools: [{ type: 'web_search' }] }, ['web_search'])).toEqual({ model: 'm' });
    expect(withoutHostedTools('chat-completions', { model: 'm', web_search_options: {} }, ['web_search'])).toEqual({
      model: 'm',
    });
    expect(withoutHostedTools('responses', body, [])).toBe(body);
  });
});
