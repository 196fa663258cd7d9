// Billing: the active organization's monthly statements (owners only): viewed as a printable
// page, or downloaded as CSV or JSON, straight from the server's statement route.
import { h, mount } from '../dom';
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
  );
}
