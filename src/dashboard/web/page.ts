import { Child, h } from './dom';

/** What the router gives each page: a signal aborted when the page is left, and its query. */
export interface PageContext {
  signal: AbortSignal;
  params: URLSearchParams;
  onCleanup(fn: () => void): void;
}

export type Page = (root: HTMLElement, ctx: PageContext) => void | Promise<void>;

/** The page title (focusable, so the router can move focus to it on navigation) and a subtitle. */
export function pageHead(title: string, subtitle?: Child): HTMLElement {
  return h(
    'div',
    { class: 'page-head' },
    h('h1', { tabindex: '-1' }, title),
    subtitle ? h('p', { class: 'muted' }, subtitle) : null,
  );
}

export const card = (...children: Child[]): HTMLElement => h('section', { class: 'card' }, children);

/** A table of rows with a last column of actions (its header read by screen readers only), stacked on a phone. */
export const actionsTable = (testid: string, columns: string[], tbody: HTMLElement): HTMLElement =>
  h(
    'div',
    { class: 'table-wrap' },
    h(
      'table',
      { class: 'table table-stack', 'data-testid': testid },
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          columns.map((c) => h('th', { scope: 'col' }, c)),
          h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')),
        ),
      ),
      tbody,
    ),
  );
