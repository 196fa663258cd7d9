// Usage: the request log (newest first) with filters and pages, totals, and spend per day.
// Filters live in the hash query (replaceState), so a reload or a shared link keeps them.
import { api, ApiKey, messageOf, Model, query, UsagePage, UsageRow } from '../api';
import { spendChart } from '../chart';
import { field, h, mount, select, showError } from '../dom';
import { formatCost, formatInt, formatLatency, formatTime, utcDay } from '../format';
import { card, PageContext, pageHead } from '../page';
import { getModels, store } from '../state';

const PAGE_SIZE = 25;
const COLUMNS = [
  'Time',
  'Surface',
  'Model',
  'Host',
  'Key',
  'Input tokens',
  'Cached',
  'Output tokens',
  'Cost (credits)',
  'Latency',
  'Status',
];
const NUMERIC = new Set([5, 6, 7, 8, 9]);

export async function renderUsage(root: HTMLElement, ctx: PageContext): Promise<void> {
  const defaults = { from: utcDay(-13), to: utcDay(0) }; // the server's default range: 14 days
  const f = {
    page: Math.max(1, Number.parseInt(ctx.params.get('page') ?? '1', 10) || 1),
    keyId: ctx.params.get('keyId') ?? '',
    model: ctx.params.get('model') ?? '',
    from: ctx.params.get('from') ?? defaults.from,
    to: ctx.params.get('to') ?? defaults.to,
  };

  const keySelect = select({ 'data-testid': 'usage-filter-key' }, [{ value: '', label: 'All keys' }], '');
  const modelSelect = select({ 'data-testid': 'usage-filter-model' }, [{ value: '', label: 'All models' }], '');
  const from = h('input', { type: 'date', value: f.from, max: defaults.to, 'data-testid': 'usage-from' });
  const to = h('input', { type: 'date', value: f.to, max: defaults.to, 'data-testid': 'usage-to' });
  const errors = h('div', { class: 'form-errors' });
  const totalRequests = h('dd', { 'data-testid': 'usage-total-requests' }, '—');
  const totalCost = h('dd', { 'data-testid': 'usage-total-cost' }, '—');
  const chartBox = h('div', { class: 'chart-box', 'data-testid': 'usage-chart' });
  const tbody = h('tbody', null, h('tr', null, h('td', { colspan: String(COLUMNS.length), class: 'muted' }, 'Loading…')));
  const table = h(
    'table',
    { class: 'table', 'data-testid': 'usage-table' },
    h('caption', { class: 'sr-only' }, 'Requests, newest first'),
    h(
      'thead',
      null,
      h(
        'tr',
        null,
        COLUMNS.map((c, i) => h('th', { scope: 'col', class: NUMERIC.has(i) ? 'num' : null }, c)),
      ),
    ),
    tbody,
  );
  const prev = h(
    'button',
    { type: 'button', class: 'btn btn-small', 'data-testid': 'usage-prev', onclick: () => go(f.page - 1) },
    '← Previous',
  );
  const next = h(
    'button',
    { type: 'button', class: 'btn btn-small', 'data-testid': 'usage-next', onclick: () => go(f.page + 1) },
    'Next →',
  );
  const pageLabel = h('span', { class: 'page-label', 'data-testid': 'usage-page', 'aria-live': 'polite' });

  let days: UsagePage['spendPerDay'] = [];
  let drawnWidth = 0;
  const drawChart = (): void => {
    drawnWidth = chartBox.clientWidth;
    chartBox.replaceChildren(spendChart(days, Math.max(260, drawnWidth)));
  };
  const observer = new ResizeObserver(() => chartBox.clientWidth !== drawnWidth && drawChart());
  observer.observe(chartBox);
  ctx.onCleanup(() => observer.disconnect());

  const onFilter = (): void => {
    Object.assign(f, { keyId: keySelect.value, model: modelSelect.value, from: from.value, to: to.value, page: 1 });
    void load();
  };
  keySelect.addEventListener('change', onFilter);
  modelSelect.addEventListener('change', onFilter);
  from.addEventListener('change', onFilter);
  to.addEventListener('change', onFilter);
  const go = (page: number): void => {
    f.page = page;
    void load();
  };

  let sequence = 0;
  async function load(): Promise<void> {
    const mine = ++sequence; // only the latest request may render: filters can change faster than answers come
    if (!f.from || !f.to) return showError(errors, 'Pick both a start and an end date.');
    if (f.from > f.to) return showError(errors, 'The start date must be on or before the end date.');
    showError(errors, null);
    history.replaceState(
      null,
      '',
      `#/usage${query({ page: f.page > 1 ? f.page : null, keyId: f.keyId, model: f.model, from: f.from === defaults.from ? null : f.from, to: f.to === defaults.to ? null : f.to })}`,
    );
    table.setAttribute('aria-busy', 'true');
    prev.disabled = next.disabled = true;
    try {
      const res = await api<UsagePage>(
        'GET',
        `/usage${query({ page: f.page, pageSize: PAGE_SIZE, keyId: f.keyId, model: f.model, from: f.from, to: f.to })}`,
        undefined,
        ctx.signal,
      );
      if (mine !== sequence) return;
      const pages = Math.max(1, Math.ceil(res.total / res.pageSize));
      if (res.data.length === 0 && f.page > pages) return go(pages); // a stale page number (from the hash)
      f.page = res.page;
      renderRows(res.data);
      totalRequests.textContent = formatInt(res.totals.requests);
      totalCost.textContent = formatCost(res.totals.cost, res.totals.costNano);
      pageLabel.textContent = `Page ${res.page} of ${pages}`;
      prev.disabled = res.page <= 1;
      next.disabled = res.page >= pages;
      days = res.spendPerDay;
      drawChart();
    } catch (error) {
      if (mine === sequence && !ctx.signal.aborted) showError(errors, messageOf(error));
    } finally {
      if (mine === sequence) table.removeAttribute('aria-busy');
    }
  }

  function renderRows(rows: UsageRow[]): void {
    if (rows.length === 0) {
      tbody.replaceChildren(
        h('tr', null, h('td', { colspan: String(COLUMNS.length), class: 'empty' }, 'No requests match these filters.')),
      );
      return;
    }
    tbody.replaceChildren(
      ...rows.map((r) =>
        h(
          'tr',
          { 'data-request-id': r.requestId },
          h('td', { class: 'nowrap', title: r.time }, formatTime(r.time)),
          h('td', null, r.surface),
          h('td', null, h('code', null, r.model)),
          hostCell(r),
          h('td', null, r.keyName),
          h('td', { class: 'num' }, formatInt(r.inputTokens)),
          h(
            'td',
            {
              class: 'num',
              title: `${formatInt(r.cacheReadTokens)} read from the cache, ${formatInt(r.cacheWriteTokens)} written to it`,
            },
            cached(r),
          ),
          h('td', { class: 'num' }, formatInt(r.outputTokens)),
          // The hosted-tool uses billed beside the tokens, when there were any.
          h(
            'td',
            { class: 'num' },
            formatCost(r.cost, r.costNano),
            toolUses(r) && h('small', null, ` (${toolUses(r)})`),
            (r.refundedNano ?? 0) > 0 &&
              h('small', { 'data-testid': 'usage-refunded' }, ` (−${formatCost(r.refunded ?? 0, r.refundedNano)} refunded)`),
            (r.estimated ?? []).length > 0 && h('small', { title: `estimated by the gateway: ${r.estimated!.join(', ')}` }, ' *'),
          ),
          h('td', { class: 'num nowrap' }, formatLatency(r.latencyMs)),
          h('td', null, statusBadge(r.status)),
        ),
      ),
    );
  }

  mount(
    root,
    pageHead('Usage', ['Requests and spend of ', h('strong', null, store.session!.activeOrg!.name), '.']),
    card(
      h('div', { class: 'filters' }, field('Key', keySelect), field('Model', modelSelect), field('From', from), field('To', to)),
      errors,
    ),
    h(
      'dl',
      { class: 'stats stats-cards', 'data-testid': 'usage-totals' },
      h('div', { class: 'stat card' }, h('dt', null, 'Requests'), totalRequests),
      h(
        'div',
        { class: 'stat card', title: 'Charges less refunds, as the ledger counts them' },
        h('dt', null, 'Spend, net of refunds (credits)'),
        totalCost,
      ),
    ),
    card(h('h2', null, 'Spend per day, net of refunds'), chartBox),
    store.session!.activeOrg!.billing ? exportCard(() => ({ from: from.value, to: to.value })) : null,
    card(
      h('h2', null, 'Requests'),
      h('div', { class: 'table-wrap' }, table),
      h('nav', { class: 'pager', 'aria-label': 'Pages' }, prev, pageLabel, next),
    ),
    store.session!.activeOrg!.billing
      ? h(
          'p',
          { class: 'muted small', 'data-testid': 'credit-notes-by-operator' },
          'Refunds and balance adjustments (credit notes) are issued by the gateway’s operator: a request’s refund shows beside its cost, and each month’s notes are in its statement (Billing).',
        )
      : null,
  );

  // Filter choices fill in as they arrive; the table does not wait for them.
  void fillFilters(keySelect, modelSelect, f.keyId, f.model, ctx.signal);
  await load();
}

async function fillFilters(
  keySelect: HTMLSelectElement,
  modelSelect: HTMLSelectElement,
  keyId: string,
  model: string,
  signal: AbortSignal,
): Promise<void> {
  const [keys, models] = await Promise.all([
    api<{ data: ApiKey[] }>('GET', '/keys', undefined, signal).then(
      (r) => r.data,
      () => [] as ApiKey[],
    ),
    getModels().catch(() => [] as Model[]),
  ]);
  if (signal.aborted) return;
  const keyOptions = [
    ...keys.map((k) => ({ value: k.id, label: k.status === 'revoked' ? `${k.name} (revoked)` : k.name })),
    { value: 'playground', label: 'Playground' }, // the playground bills under this pseudo key
  ];
  const modelOptions = models.map((m) => ({ value: m.id, label: m.name }));
  // A filter from the hash stays selectable even when the lists no longer have it.
  if (keyId && !keyOptions.some((o) => o.value === keyId)) keyOptions.push({ value: keyId, label: keyId });
  if (model && !modelOptions.some((o) => o.value === model)) modelOptions.push({ value: model, label: model });
  for (const o of keyOptions) keySelect.append(h('option', { value: o.value }, o.label));
  for (const o of modelOptions) modelSelect.append(h('option', { value: o.value }, o.label));
  keySelect.value = keyId;
  modelSelect.value = model;
}

/** A hosted tool's class as people read it. */
const TOOL_USE_NAMES: Record<string, [string, string]> = {
  webSearch: ['web search', 'web searches'],
  webFetch: ['web fetch', 'web fetches'],
  codeExecution: ['code run', 'code runs'],
  fileSearch: ['file search', 'file searches'],
  imageGeneration: ['image', 'images'],
};

/** The hosted-tool uses billed with a request (`3 web searches`), or '' when none. */
function toolUses(r: UsageRow): string {
  return Object.entries(r.hostedToolUses ?? {})
    .map(([toolClass, n]) => {
      const [one, many] = TOOL_USE_NAMES[toolClass] ?? [toolClass, toolClass];
      return `${formatInt(n)} ${n === 1 ? one : many}`;
    })
    .join(', ');
}

/** Input tokens read from the cache / written to it, or a dash when it did neither. */
function cached(r: UsageRow): string {
  return r.cacheReadTokens === 0 && r.cacheWriteTokens === 0
    ? '—'
    : `${formatInt(r.cacheReadTokens)} / ${formatInt(r.cacheWriteTokens)}`;
}

/** The host that served, and, when it took more than one call, how many, each told in the cell's title. */
function hostCell(r: UsageRow): HTMLElement {
  const attempts = r.attempts ?? [];
  if (attempts.length <= 1) return h('td', null, r.host ?? '—');
  const told = attempts
    .map(
      (a, i) =>
        `${i + 1}. ${a.host}: ${a.reason.replace(/_/g, ' ')}${a.status === null ? '' : ` (${a.status})`}, ${a.durationMs} ms`,
    )
    .join('\n');
  return h(
    'td',
    { title: told, 'data-testid': 'attempts' },
    r.host ?? '—',
    ' ',
    h('span', { class: 'muted' }, `(${attempts.length} attempts)`),
  );
}

function statusBadge(status: string): HTMLElement {
  const kind = status === 'ok' ? 'badge-ok' : status.startsWith('provider_') ? 'badge-error' : 'badge-warn';
  return h('span', { class: `badge ${kind}` }, status.replace(/_/g, ' '));
}

/**
 * The usage export in the FinOps FOCUS columns (CSV), for those who may see billing (owners): the range
 * shown, a row per request or per day × model × key. The link is made when clicked, from the range then.
 */
function exportCard(range: () => { from: string; to: string }): HTMLElement {
  const link = (group: 'request' | 'day', label: string) =>
    h(
      'a',
      {
        class: 'btn btn-small',
        download: '',
        href: '#',
        'data-testid': `usage-export-${group}`,
        onclick: (event: MouseEvent) => {
          const { from, to } = range();
          (event.currentTarget as HTMLAnchorElement).href =
            `/dashboard/api/usage/focus?${new URLSearchParams({ group, from, to })}`;
        },
      },
      label,
    );
  return card(
    h('h2', null, 'Export'),
    h('p', { class: 'muted' }, 'Charges and credit notes of the range above, as CSV in the FinOps FOCUS columns.'),
    h('div', { class: 'filters' }, link('request', 'A row per request'), link('day', 'A row per day, model and key')),
  );
}
