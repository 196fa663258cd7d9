// The web searches the fakes' hosts run (fake-upstream.ts), apart so each format's fake can read them.

export interface FakeSearch {
  query: string;
  url: string;
  title: string;
}

/** The search a host runs for a request offering its web search tool when the reply names none. */
export const DEFAULT_SEARCH: FakeSearch = {
  query: 'weather in Paris today',
  url: 'https://weather.example/paris',
  title: 'Paris weather',
};
