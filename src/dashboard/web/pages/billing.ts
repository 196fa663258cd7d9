// Billing: the active organization's monthly statements (owners only): viewed as a printable
// page, or downloaded as CSV or JSON, straight from the server's statement route; and its ledger's
// hash chain (head and count) with the ledger export, for an auditor's `model-gateway ledger verify`.
import { api, LEDGER_EXPORT_URL, LedgerChain, messageOf } from '../api';
import { h, mount, showError } from '../dom';
import { formatInt } from '../format';
import { card, PageContext, pageHead } from '../page';
import { store } from '../state';

export function renderBilling(root: HTMLElement, ctx: PageContext): void {
  const org = store.session!.activeOrg!;
  if (!org.billing) {
    mount(
      root,
      pageHead('Billing'),
      h(
        'div',
        { class: 'alert alert-info', 'data-testid': 'billing-owners-only' },
        "Only the organization's owners see its billing.",
      ),
    );
    return;
  }
  const thisMonth = new Date().toISOString().slice(0, 7);
  const month = h('input', {
    type: 'month',
    value: /^\d{4}-\d{2}$/.test(ctx.params.get('month') ?? '') ? ctx.params.get('month')! : thisMonth,
    max: thisMonth,
    'data-testid': 'billing-month',
    'aria-label': 'Month',
  });
  const link = (format: string, label: string, testid: string) =>
    h('a', { class: 'btn btn-small', 'data-testid': testid, target: format === 'html' ? '_blank' : null }, label);
  const view = link('html', 'View statement', 'billing-view');
  const csv = link('csv', 'Download CSV', 'billing-csv');
  const json = link('json', 'Download JSON', 'billing-json');
  const update = () => {
    for (const [a, format] of [
      [view, 'html'],
      [csv, 'csv'],
      [json, 'json'],
    ] as const) {
      a.href = `/dashboard/api/statements?month=${encodeURIComponent(month.value)}&format=${format}`;
      if (format === 'json') a.setAttribute('download', `statement-${org.id}-${month.value}.json`);
    }
  };
  const chainHead = h('code', { class: 'chain-head', 'data-testid': 'ledger-chain-head' }, '…');
  const chainEvents = h('span', { 'data-testid': 'ledger-chain-events' }, '…');
  const chainErrors = h('div', { class: 'form-errors' });
  month.addEventListener('change', update);
  update();
  mount(
    root,
    pageHead('Billing', ['Statements of ', h('strong', null, org.name), ', by calendar month (UTC).']),
    card(
      h('h2', null, 'Monthly statement'),
      h(
        'p',
        { class: 'muted small' },
        'Opening balance, grants, charges by model, key and token class, credit notes and closing balance, folded from the ledger.',
      ),
      h('div', { class: 'inline-form' }, month, view, csv, json),
    ),
    card(
      h('h2', null, 'Ledger'),
      h(
        'p',
        { class: 'muted small' },
        'Every ledger event of this organization is chained to the one before it. Keep the head: an export of the same events must end at it (model-gateway ledger verify FILE --head …).',
      ),
      h('p', null, 'Chain head ', chainHead, ' after ', chainEvents, ' events.'),
      chainErrors,
      h(
        'a',
        { class: 'btn btn-small', href: LEDGER_EXPORT_URL, download: `ledger-${org.id}.ndjson`, 'data-testid': 'ledger-export' },
        'Download the ledger export (NDJSON)',
      ),
    ),
  );
  void api<LedgerChain>('GET', '/ledger/chain', undefined, ctx.signal).then(
    (chain) => {
      chainHead.textContent = chain.head;
      chainEvents.textContent = formatInt(chain.events);
    },
    (error) => !ctx.signal.aborted && showError(chainErrors, messageOf(error)),
  );
}
