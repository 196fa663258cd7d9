// The spend-per-day bar chart: inline SVG drawn at the container's pixel width (not scaled by a
// viewBox, so labels keep their size on a phone).
import { s } from './dom';
import { formatCost, formatCredits, formatDay } from './format';

export interface DaySpend {
  day: string;
  cost: number;
  costNano?: number;
}

const HEIGHT = 220;
const FONT_PX = 11;

/** A round step (1, 2 or 5 × 10^k) at least `raw`. */
function niceStep(raw: number): number {
  const power = 10 ** Math.floor(Math.log10(raw));
  const f = raw / power;
  return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * power;
}

export function spendChart(days: DaySpend[], width: number): SVGSVGElement {
  const max = Math.max(0, ...days.map((d) => d.cost));
  const step = max > 0 ? niceStep(max / 4) : 1;
  const ticks = max > 0 ? Array.from({ length: Math.ceil(max / step - 1e-9) + 1 }, (_, i) => i * step) : [0];
  const top = ticks[ticks.length - 1] || 1;
  const labels = ticks.map(formatCredits);

  const m = { top: 24, right: 8, bottom: 40, left: Math.ceil(Math.max(...labels.map((l) => l.length)) * FONT_PX * 0.62) + 12 };
  const plotW = Math.max(10, width - m.left - m.right);
  const plotH = HEIGHT - m.top - m.bottom;
  const y = (v: number): number => m.top + plotH - (v / top) * plotH;
  const band = plotW / Math.max(1, days.length);
  const barW = Math.max(1, Math.min(40, band * 0.72));
  const labelEvery = Math.max(1, Math.ceil(days.length / Math.max(1, Math.floor(plotW / 58))));
  const total = days.reduce((n, d) => n + (d.costNano ?? 0), 0);
  const exactTotal = days.every((d) => typeof d.costNano === 'number');
  const summary = days.length
    ? `Spend per day from ${formatDay(days[0].day, true)} to ${formatDay(days[days.length - 1].day, true)}: ` +
      `${exactTotal ? formatCost(0, total) : formatCredits(days.reduce((n, d) => n + d.cost, 0))} credits in total.`
    : 'No days in range.';

  return s(
    'svg',
    { class: 'chart', width, height: HEIGHT, role: 'img', 'aria-label': summary, 'data-testid': 'usage-chart-svg' },
    s('text', { class: 'axis-title', x: 0, y: 12 }, 'Credits'),
    ticks.map((t, i) =>
      s(
        'g',
        null,
        s('line', { class: i === 0 ? 'axis' : 'grid', x1: m.left, x2: m.left + plotW, y1: y(t), y2: y(t) }),
        s('text', { class: 'tick', x: m.left - 6, y: y(t), 'text-anchor': 'end', 'dominant-baseline': 'middle' }, labels[i]),
      ),
    ),
    days.map((d, i) => {
      const cx = m.left + band * i + band / 2;
      // A non-zero day stays visible (1 px) however small beside the largest.
      const h = d.cost > 0 ? Math.max(1, (d.cost / top) * plotH) : 0;
      return s(
        'g',
        { class: 'day' },
        s('title', null, `${formatDay(d.day, true)}: ${formatCost(d.cost, d.costNano)} credits`),
        // A full-height transparent column, so hovering any day (even an empty one) shows its tooltip.
        s('rect', { class: 'hit', x: m.left + band * i, y: m.top, width: band, height: plotH }),
        s('rect', {
          class: 'bar',
          x: cx - barW / 2,
          y: m.top + plotH - h,
          width: barW,
          height: h,
          'data-day': d.day,
          'data-cost': d.cost,
        }),
        i % labelEvery === 0
          ? s('text', { class: 'tick', x: cx, y: m.top + plotH + 16, 'text-anchor': 'middle' }, formatDay(d.day))
          : null,
      );
    }),
    s('text', { class: 'axis-title', x: m.left + plotW / 2, y: HEIGHT - 4, 'text-anchor': 'middle' }, 'Day (UTC)'),
    max > 0
      ? null
      : s(
          'text',
          { class: 'chart-empty', x: m.left + plotW / 2, y: m.top + plotH / 2, 'text-anchor': 'middle' },
          'No spend in this period',
        ),
  );
}
