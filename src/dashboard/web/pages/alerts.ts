// Alerts of the active organization, for its owners: the webhook URL, the thresholds, a test alert
// and the signing secret (shown once, when issued).
import { api, messageOf } from '../api';
import { asyncListener, field, h, mount, showError, toast } from '../dom';
import { card, PageContext, pageHead } from '../page';
import { store } from '../state';

interface AlertsView {
  url: string;
  balance_below: string | null;
  day_spend_above: string | null;
  key_limits: boolean;
  secret_issued_at: string;
}

export async function renderAlerts(root: HTMLElement, ctx: PageContext): Promise<void> {
  const org = store.session!.activeOrg!;
  if (!org.billing) {
    mount(root, pageHead('Alerts', ["Only the organization's owners set its alerts."]));
    return;
  }
  const errors = h('div', { class: 'form-errors' });
  const secretBox = h('div', { 'data-testid': 'alerts-secret' });
  const url = h('input', {
    type: 'url',
    required: true,
    placeholder: 'https://example.com/hooks/gateway',
    'data-testid': 'alerts-url',
  });
  const balance = h('input', { type: 'text', inputmode: 'decimal', placeholder: 'off', 'data-testid': 'alerts-balance' });
  const daySpend = h('input', { type: 'text', inputmode: 'decimal', placeholder: 'off', 'data-testid': 'alerts-day-spend' });
  const keyLimits = h('input', { type: 'checkbox', 'data-testid': 'alerts-key-limits' });
  const status = h('p', { class: 'muted small', 'data-testid': 'alerts-status' });

  function show(view: AlertsView | null): void {
    url.value = view?.url ?? '';
    balance.value = view?.balance_below ?? '';
    daySpend.value = view?.day_spend_above ?? '';
    keyLimits.checked = view?.key_limits ?? false;
    status.textContent = view ? `On. Signing secret issued ${view.secret_issued_at}.` : 'Off.';
  }
  function showSecret(secret: string | undefined): void {
    secretBox.replaceChildren(
      ...(secret
        ? [h('p', null, 'Signing secret (shown this once; receivers verify each alert with it):'), h('code', null, secret)]
        : []),
    );
  }
  async function run(work: () => Promise<unknown>, done: string): Promise<void> {
    try {
      await work();
      showError(errors, null);
      toast(done);
    } catch (error) {
      if (!ctx.signal.aborted) showError(errors, messageOf(error));
    }
  }
  const save = asyncListener(async (event: SubmitEvent) => {
    event.preventDefault();
    await run(async () => {
      const body = {
        url: url.value.trim(),
        balance_below: balance.value.trim() || null,
        day_spend_above: daySpend.value.trim() || null,
        key_limits: keyLimits.checked,
      };
      const answer = await api<{ data: AlertsView; secret?: string }>('POST', '/alerts', body, ctx.signal);
      show(answer.data);
      showSecret(answer.secret);
    }, 'Alerts saved.');
  });
  const button = (label: string, testid: string, work: () => Promise<unknown>, done: string) =>
    h(
      'button',
      { type: 'button', class: 'btn btn-small', 'data-testid': testid, onclick: asyncListener(() => run(work, done)) },
      label,
    );

  mount(
    root,
    pageHead('Alerts', [
      'Webhooks for ',
      h('strong', null, org.name),
      ' when its balance, a day’s spend or a key’s limit crosses a line.',
    ]),
    card(
      h('h2', null, 'Webhook'),
      status,
      errors,
      h(
        'form',
        { class: 'inline-form', novalidate: true, onsubmit: save },
        field('URL', url),
        field('Balance below (credits)', balance, 'Empty: off.'),
        field('A day’s spend above (credits, UTC day)', daySpend, 'Empty: off.'),
        h('label', { class: 'check' }, keyLimits, ' When a key reaches 80 % and 100 % of its limit'),
        h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'alerts-save' }, 'Save'),
      ),
      h(
        'div',
        { class: 'actions' },
        button('Send a test alert', 'alerts-test', () => api('POST', '/alerts/test', undefined, ctx.signal), 'Test alert sent.'),
        button(
          'New signing secret',
          'alerts-rotate',
          async () => showSecret((await api<{ secret: string }>('POST', '/alerts/secret', undefined, ctx.signal)).secret),
          'New secret issued: the old one no longer signs.',
        ),
        button(
          'Turn off',
          'alerts-off',
          async () => {
            await api('POST', '/alerts/off', undefined, ctx.signal);
            show(null);
          },
          'Alerts turned off.',
        ),
      ),
      secretBox,
    ),
  );
  show((await api<{ data: AlertsView | null }>('GET', '/alerts', undefined, ctx.signal)).data);
}
