import { csvText } from '../http/csv';
import { formatCredits, formatNanoSum, type NanoSum } from '../ledger/money';
import type { Statement } from './statement';

/** A statement as CSV (RFC 4180) and as a printable HTML page: the same lines, amounts exact. */

/** Millionths of a nano-credit as exact decimal credits: 15 decimals at most. */
export function formatMicroNano(value: bigint): string {
  const sign = value < 0n ? '-' : '';
  const abs = value < 0n ? -value : value;
  const unit = 10n ** 15n;
  const fraction = (abs % unit).toString().padStart(15, '0').replace(/0+$/, '');
  return `${sign}${abs / unit}${fraction ? `.${fraction}` : ''}`;
}

const negated = (sum: NanoSum): bigint => -BigInt(sum);

interface Line {
  section: string;
  item: string;
  quantity: number | '';
  credits: string;
}

/** Every line of a statement, in the order both formats show them. */
function linesOf(s: Statement): Line[] {
  const lines: Line[] = [{ section: 'opening_balance', item: '', quantity: '', credits: formatNanoSum(s.openingBalance) }];
  for (const g of s.grants.items)
    lines.push({ section: 'grant', item: `${g.grantedAt} ${g.reason}`, quantity: '', credits: formatCredits(g.amount) });
  for (const m of s.charges.byModel)
    lines.push({ section: 'charges_by_model', item: m.model, quantity: m.requests, credits: formatNanoSum(negated(m.amount)) });
  for (const k of s.charges.byKey)
    lines.push({ section: 'charges_by_key', item: k.keyId, quantity: k.requests, credits: formatNanoSum(negated(k.amount)) });
  for (const c of s.charges.byClass)
    lines.push({
      section: 'charges_by_class',
      item: c.class,
      quantity: c.quantity,
      credits: formatMicroNano(-BigInt(c.costMicroNano)),
    });
  lines.push({
    section: 'charges_by_class',
    item: 'rounding',
    quantity: '',
    credits: formatMicroNano(-BigInt(s.charges.roundingMicroNano)),
  });
  lines.push({
    section: 'charges',
    item: 'total',
    quantity: s.charges.requests,
    credits: formatNanoSum(negated(s.charges.amount)),
  });
  for (const n of s.creditNotes.items)
    lines.push({
      section: n.kind === 'refund' ? 'refund' : 'adjustment',
      item: `${n.issuedAt} ${n.reason}${n.reservationId ? ` ${n.reservationId}` : ''}`,
      quantity: '',
      credits: formatCredits(n.amount),
    });
  lines.push({ section: 'closing_balance', item: '', quantity: '', credits: formatNanoSum(s.closingBalance) });
  lines.push({ section: 'chain_head', item: s.chain.head, quantity: s.chain.events, credits: '' });
  return lines;
}

export function statementCsv(s: Statement): string {
  const rows: Array<Array<string | number>> = [['organization', 'month', 'section', 'item', 'quantity', 'credits']];
  for (const line of linesOf(s)) rows.push([s.orgId, s.month, line.section, line.item, line.quantity, line.credits]);
  return csvText(rows);
}

/** For a terminal: one line each, the credits aligned. */
export function statementText(s: Statement): string {
  const lines = linesOf(s);
  const label = (l: Line) =>
    `${SECTION_TITLES[l.section] ?? l.section}${l.item ? `: ${l.item}` : ''}${l.quantity === '' ? '' : ` (${l.quantity})`}`;
  const width = Math.max(...lines.map((l) => label(l).length));
  const head = `statement of ${s.orgId} for ${s.month} (${s.from} to ${s.to}), in credits`;
  return [head, ...lines.map((l) => `${label(l).padEnd(width)}  ${l.credits.padStart(20)}`)].join('\n') + '\n';
}

const escapeHtml = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const SECTION_TITLES: Record<string, string> = {
  opening_balance: 'Opening balance',
  grant: 'Grant',
  charges_by_model: 'Charges by model',
  charges_by_key: 'Charges by key',
  charges_by_class: 'Charges by token class (before rounding)',
  charges: 'Charges',
  refund: 'Refund',
  adjustment: 'Adjustment',
  closing_balance: 'Closing balance',
  chain_head: 'Ledger chain head (its events)',
};

/** The dashboard's icon (as its index.html has it), inline: the printable page asks the server for no /favicon.ico. */
const GATEWAY_ICON =
  "data:image/svg+xml,%3Csvg xmlns='http://www.w3.org/2000/svg' viewBox='0 0 32 32'%3E%3Crect width='32' height='32' rx='7' fill='%233d5bd9'/%3E%3Cpath d='M8 23V9l8 8 8-8v14' fill='none' stroke='%23fff' stroke-width='3' stroke-linecap='round' stroke-linejoin='round'/%3E%3C/svg%3E";

/** A page to print or save: no scripts, no outside resources. */
export function statementHtml(s: Statement): string {
  const rows = linesOf(s)
    .map(
      (l) =>
        `<tr><td>${escapeHtml(SECTION_TITLES[l.section] ?? l.section)}</td><td>${escapeHtml(l.item)}</td>` +
        `<td class="n">${l.quantity}</td><td class="n">${escapeHtml(l.credits)}</td></tr>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" type="image/svg+xml" href="${GATEWAY_ICON}"><title>Statement ${escapeHtml(s.orgId)} ${escapeHtml(s.month)}</title>
<style>body{font:14px system-ui,sans-serif;margin:2rem}table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #ddd;padding:.3rem .5rem;text-align:left}.n{text-align:right;font-variant-numeric:tabular-nums}</style>
</head><body>
<h1>Credit statement</h1>
<p>Organization <code>${escapeHtml(s.orgId)}</code>, ${escapeHtml(s.month)} (${escapeHtml(s.from)} to ${escapeHtml(s.to)}, UTC). Amounts in credits.</p>
<table><thead><tr><th>Section</th><th>Item</th><th class="n">Quantity</th><th class="n">Credits</th></tr></thead>
<tbody>
${rows}
</tbody></table>
</body></html>
`;
}
