import { decideHostedTools, HOSTED_TOOLS_RUN, isHostedTool } from '../../src/canonical/hosted-tools';

describe('hosted tools: which are left out, which refused', () => {
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

  it('no host kind runs a hosted tool yet', () => {
    expect(HOSTED_TOOLS_RUN.size).toBe(0);
  });

  it('leaves out hosted tools that are only offered, each once, in the order given', () => {
    expect(
      decideHostedTools({ hosted: ['web_search', 'image_generation', 'web_search'], clientTools: true, required: null }),
    ).toEqual({ omitted: ['web_search', 'image_generation'], carried: [] });
    // Offered alone, with the choice left to the model: the call goes on without tools.
    expect(decideHostedTools({ hosted: ['web_search'], clientTools: false, required: null })).toEqual({
      omitted: ['web_search'],
      carried: [],
    });
    expect(decideHostedTools({ hosted: [], clientTools: true, required: 'any' })).toEqual({ omitted: [], carried: [] });
  });

  it('refuses a request that requires a hosted tool no host runs, naming it', () => {
    expect(decideHostedTools({ hosted: ['web_search'], clientTools: true, required: { hosted: 'web_search' } })).toEqual({
      refused:
        'tool_choice requires the hosted tool "web_search", which no model of this gateway can run yet (its hosts run no tools of their own): offered without being required, it is left out of the call',
    });
  });

  it('refuses "any tool" when the only tools offered are hosted ones, naming them', () => {
    const decision = decideHostedTools({ hosted: ['web_search', 'file_search'], clientTools: false, required: 'any' });
    expect(decision).toEqual({
      refused:
        'tool_choice requires a tool, and the only tools offered are hosted ones ("web_search", "file_search"), which no model of this gateway can run yet (its hosts run no tools of their own)',
    });
    // With a function of the client's beside them, the model can still call a tool.
    expect(decideHostedTools({ hosted: ['web_search'], clientTools: true, required: 'any' })).toEqual({
      omitted: ['web_search'],
      carried: [],
    });
  });

  it('carries the hosted tools a serving host runs, and lets a request require them', () => {
    const runs = new Set(['web_search']);
    expect(
      decideHostedTools(
        { hosted: ['web_search', 'code_interpreter'], clientTools: false, required: { hosted: 'web_search' } },
        runs,
      ),
    ).toEqual({ omitted: ['code_interpreter'], carried: ['web_search'] });
    expect(decideHostedTools({ hosted: ['web_search'], clientTools: false, required: 'any' }, runs)).toEqual({
      omitted: [],
      carried: ['web_search'],
    });
  });
});
