// API keys: create (the secret is shown once, then removed from the page), list, set a key's credit
// limit, rate limits and expiry, revoke with an inline confirmation. Members whom no owner allowed
// to manage keys see the list only; management keys are made by owners only.
import { api, ApiKey, CreatedKey, messageOf } from '../api';
import { asyncListener, copyText, field, h, mount, select, showError, toast } from '../dom';
import { formatDateTime } from '../format';
import { actionsTable, card, PageContext, pageHead } from '../page';
import { getModels, store } from '../state';

export async function renderKeys(root: HTMLElement, ctx: PageContext): Promise<void> {
  const org = store.session!.activeOrg!;
  const manages = org.manageKeys;
  // Management keys reach what only owners see (alerts, the ledger): owners make them. Billing
  // rights (credit notes) are the operator's to give: the page offers none.
  const management = h('input', { type: 'checkbox', 'data-testid': 'key-management' });
  const name = h('input', {
    type: 'text',
    required: true,
    maxlength: '100',
    placeholder: 'e.g. laptop, production',
    'data-testid': 'key-name',
  });
  const create = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'key-create' }, 'Create key');
  const createErrors = h('div', { class: 'form-errors' });
  const secretSlot = h('div');
  const tableErrors = h('div', { class: 'form-errors' });
  const tbody = h('tbody', null, h('tr', null, h('td', { colspan: '9', class: 'muted' }, 'Loading…')));
  let keys: ApiKey[] = [];

  async function onCreate(event: SubmitEvent): Promise<void> {
    event.preventDefault();
    const value = name.value.trim();
    if (!value) return showError(createErrors, 'Give the key a name, so you can tell it apart later.');
    create.disabled = true;
    showError(createErrors, null);
    try {
      const asked = { name: value, ...(management.checked ? { management: true } : {}) };
      const key = await api<CreatedKey>('POST', '/keys', asked, ctx.signal);
      name.value = '';
      management.checked = false;
      keys = [
        {
          id: key.id,
          name: key.name,
          prefix: key.prefix,
          createdAt: key.createdAt,
          lastUsedAt: null,
          status: 'active',
          kind: key.kind,
          billing: key.billing,
        },
        ...keys,
      ];
      renderRows();
      const panel = await secretPanel(key, () => {
        secretSlot.replaceChildren(); // the secret leaves the DOM for good
        name.focus();
      });
      secretSlot.replaceChildren(panel);
      panel.querySelector<HTMLButtonElement>('[data-testid="key-copy"]')?.focus({ preventScroll: true });
      panel.scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    } catch (error) {
      if (!ctx.signal.aborted) showError(createErrors, messageOf(error));
    } finally {
      create.disabled = false;
    }
  }

  async function revoke(key: ApiKey, cell: HTMLElement): Promise<void> {
    cell.querySelectorAll('button').forEach((b) => (b.disabled = true));
    try {
      await api('POST', `/keys/${encodeURIComponent(key.id)}/revoke`, undefined, ctx.signal);
      key.status = 'revoked';
      toast(`Key “${key.name}” revoked.`);
      showError(tableErrors, null);
    } catch (error) {
      if (ctx.signal.aborted) return;
      showError(tableErrors, messageOf(error));
    }
    renderRows();
  }

  /** Swaps the row's Revoke button for "Revoke this key? [Revoke] [Cancel]"; one open at a time. */
  function confirmRevoke(key: ApiKey, cell: HTMLElement): void {
    renderRows(); // closes any other open confirmation
    const row = tbody.querySelector<HTMLElement>(`tr[data-key-id="${CSS.escape(key.id)}"] td.actions`) ?? cell;
    const confirm = h(
      'button',
      {
        type: 'button',
        class: 'btn btn-danger btn-small',
        'data-testid': 'key-revoke-confirm',
        onclick: asyncListener(() => revoke(key, row)),
      },
      'Revoke',
    );
    const cancel = h(
      'button',
      { type: 'button', class: 'btn btn-small', 'data-testid': 'key-revoke-cancel', onclick: () => renderRows() },
      'Cancel',
    );
    row.replaceChildren(
      h(
        'div',
        { class: 'confirm', role: 'group', 'aria-label': `Revoke ${key.name}?` },
        h('span', null, 'Revoke? Apps using it stop working.'),
        confirm,
        cancel,
      ),
    );
    row.addEventListener('keydown', (e: KeyboardEvent) => e.key === 'Escape' && renderRows());
    confirm.focus();
  }

  /** A cell showing one of the key's settings, with a button that opens its editor (for those who manage keys). */
  function settingCell(
    key: ApiKey,
    setting: { label: string; testid: string; text: string; set: boolean; edit: (cell: HTMLElement) => void },
  ): HTMLElement {
    const cell = h('td', { 'data-label': setting.label, 'data-testid': `key-${setting.testid}-text-${key.id}` }, setting.text);
    // A management key is changed by owners only (members who manage keys may still revoke it).
    if (key.status === 'active' && manages && (key.kind !== 'management' || org.role === 'owner')) {
      cell.append(
        ' ',
        h(
          'button',
          {
            type: 'button',
            class: 'btn btn-small',
            'data-testid': `key-${setting.testid}-${key.id}`,
            'aria-label': `Set the ${setting.label.toLowerCase()} of ${key.name}`,
            onclick: () => setting.edit(cell),
          },
          setting.set ? 'Change' : 'Set',
        ),
      );
    }
    return cell;
  }

  /** An inline editor in `cell`: its controls, and a save that sends `body()` to the key's `path`. */
  function editor(
    key: ApiKey,
    cell: HTMLElement,
    testid: string,
    controls: HTMLElement[],
    path: string,
    body: () => unknown,
  ): void {
    const save = h('button', { type: 'submit', class: 'btn btn-primary btn-small', 'data-testid': `key-${testid}-save` }, 'Save');
    const cancel = h('button', { type: 'button', class: 'btn btn-small', onclick: () => renderRows() }, 'Cancel');
    const form = h('form', { class: 'inline-form' }, ...controls, save, cancel);
    form.addEventListener(
      'submit',
      asyncListener(async (event: Event) => {
        event.preventDefault();
        save.disabled = true;
        try {
          const updated = await api<ApiKey>('POST', `/keys/${encodeURIComponent(key.id)}/${path}`, body(), ctx.signal);
          Object.assign(key, updated);
          showError(tableErrors, null);
          toast(`“${key.name}” updated.`);
          renderRows();
        } catch (error) {
          if (ctx.signal.aborted) return;
          showError(tableErrors, messageOf(error));
          save.disabled = false;
        }
      }),
    );
    cell.replaceChildren(form);
    controls[0]?.focus();
  }

  const RESET_WORDS: Record<string, string> = { never: '', daily: ' a day', weekly: ' a week', monthly: ' a month' };

  /** The credit limit: an amount of credits (empty for none) and when it resets. */
  const limitCell = (key: ApiKey) =>
    settingCell(key, {
      label: 'Limit',
      testid: 'limit',
      text: key.limit ? `${key.limitUsage ?? '0'} of ${key.limit}${RESET_WORDS[key.limitReset ?? 'never']}` : 'None',
      set: Boolean(key.limit),
      edit: (cell) => {
        const amount = h('input', {
          type: 'text',
          inputmode: 'decimal',
          placeholder: 'credits, empty for none',
          value: key.limit ?? '',
          'data-testid': 'key-limit-amount',
          'aria-label': 'Credit limit',
        });
        const reset = select(
          { 'data-testid': 'key-limit-reset', 'aria-label': 'Resets' },
          (['never', 'daily', 'weekly', 'monthly'] as const).map((r) => ({
            value: r,
            label: r === 'never' ? 'never resets' : r,
          })),
          key.limitReset ?? 'never',
        );
        editor(key, cell, 'limit', [amount, reset], 'limit', () => {
          const value = amount.value.trim();
          return { limit: value === '' ? null : value, reset: reset.value };
        });
      },
    });

  /** The key's own rate limits: requests and tokens per minute (empty for none). */
  const rateCell = (key: ApiKey) => {
    const rpm = key.rateLimits?.requestsPerMinute;
    const tpm = key.rateLimits?.tokensPerMinute;
    const parts = [rpm ? `${rpm} requests` : null, tpm ? `${tpm} tokens` : null].filter(Boolean);
    return settingCell(key, {
      label: 'Rate limits',
      testid: 'rate',
      text: parts.length > 0 ? `${parts.join(', ')} a minute` : 'Organization’s',
      set: parts.length > 0,
      edit: (cell) => {
        const number = (testid: string, label: string, value: number | undefined) =>
          h('input', {
            type: 'number',
            min: '1',
            step: '1',
            placeholder: `${label}, empty for none`,
            value: value ?? '',
            'data-testid': testid,
            'aria-label': label,
          });
        const requests = number('key-rate-rpm', 'Requests per minute', rpm);
        const tokens = number('key-rate-tpm', 'Tokens per minute', tpm);
        const value = (input: HTMLInputElement) => (input.value.trim() === '' ? null : Number(input.value));
        editor(key, cell, 'rate', [requests, tokens], 'rate-limits', () => ({
          requestsPerMinute: value(requests),
          tokensPerMinute: value(tokens),
        }));
      },
    });
  };

  /** When the key stops working (local time in the page, sent as UTC), empty for never. */
  const expiryCell = (key: ApiKey) =>
    settingCell(key, {
      label: 'Expires',
      testid: 'expiry',
      text: key.expiresAt ? formatDateTime(key.expiresAt) : 'Never',
      set: Boolean(key.expiresAt),
      edit: (cell) => {
        const when = h('input', { type: 'datetime-local', 'data-testid': 'key-expiry-at', 'aria-label': 'Expires at' });
        if (key.expiresAt) {
          const at = new Date(key.expiresAt);
          when.value = new Date(at.getTime() - at.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
        }
        editor(key, cell, 'expiry', [when], 'expiry', () => ({
          expiresAt: when.value === '' ? null : new Date(when.value).toISOString(),
        }));
      },
    });

  function renderRows(): void {
    if (keys.length === 0) {
      tbody.replaceChildren(
        h('tr', null, h('td', { colspan: '9', class: 'empty' }, 'No keys yet. Create one above to call the API.')),
      );
      return;
    }
    tbody.replaceChildren(
      ...keys.map((key) => {
        const actions = h('td', { class: 'actions' });
        if (key.status === 'active' && manages) {
          actions.append(
            h(
              'button',
              {
                type: 'button',
                class: 'btn btn-small btn-danger-quiet',
                'data-testid': `key-revoke-${key.id}`,
                'aria-label': `Revoke ${key.name}`,
                onclick: () => confirmRevoke(key, actions),
              },
              'Revoke',
            ),
          );
        }
        return h(
          'tr',
          { 'data-key-id': key.id },
          h(
            'td',
            { 'data-label': 'Name' },
            key.name,
            key.kind === 'management'
              ? h('span', { class: 'badge', title: 'Manages keys; cannot call models' }, ' Management')
              : null,
            key.billing
              ? h(
                  'span',
                  {
                    class: 'badge',
                    title: 'Given billing rights by the operator: issues credit notes through /api/v1/credit-notes',
                  },
                  ' Billing',
                )
              : null,
          ),
          h('td', { 'data-label': 'Key' }, h('code', null, `${key.prefix}…`)),
          h('td', { 'data-label': 'Created', title: key.createdAt }, formatDateTime(key.createdAt)),
          h(
            'td',
            { 'data-label': 'Last used', title: key.lastUsedAt ?? '' },
            key.lastUsedAt ? formatDateTime(key.lastUsedAt) : 'Never',
          ),
          limitCell(key),
          rateCell(key),
          expiryCell(key),
          h(
            'td',
            { 'data-label': 'Status' },
            h(
              'span',
              { class: key.status === 'active' ? 'badge badge-ok' : 'badge' },
              key.status.charAt(0).toUpperCase() + key.status.slice(1),
            ),
          ),
          actions,
        );
      }),
    );
  }

  mount(
    root,
    pageHead('API keys', [
      'Keys of ',
      h('strong', null, org.name),
      '. Requests with a key are paid from this organization’s credits.',
    ]),
    manages
      ? card(
          h('h2', null, 'Create a key'),
          h(
            'form',
            { class: 'inline-form', novalidate: true, onsubmit: asyncListener(onCreate) },
            field('Name', name),
            org.role === 'owner'
              ? h(
                  'label',
                  { class: 'check', title: 'Creates, changes and revokes keys through /api/v1/keys; cannot call models' },
                  management,
                  ' Management key',
                )
              : null,
            create,
          ),
          createErrors,
        )
      : h('p', { class: 'alert alert-info' }, 'An owner of this organization can allow you to create and change keys.'),
    secretSlot,
    card(
      h('h2', null, 'Keys'),
      tableErrors,
      actionsTable('keys-table', ['Name', 'Key', 'Created', 'Last used', 'Limit', 'Rate limits', 'Expires', 'Status'], tbody),
    ),
  );

  const res = await api<{ data: ApiKey[] }>('GET', '/keys', undefined, ctx.signal);
  keys = res.data;
  renderRows();
}

/** The one-time secret, how to use it, and a Done button that removes it from the page. */
async function secretPanel(key: CreatedKey, close: () => void): Promise<HTMLElement> {
  const urls = store.config!.baseUrls;
  const model = await getModels().then(
    (models) => models[0]?.id ?? 'MODEL_ID',
    () => 'MODEL_ID',
  );
  const secret = h('code', { class: 'secret', 'data-testid': 'key-secret' }, key.secret);
  const curlText = [
    `curl ${urls.chatCompletions}/chat/completions \\`,
    `  -H "Authorization: Bearer ${key.secret}" \\`,
    `  -H "Content-Type: application/json" \\`,
    `  -d '{"model": "${model}", "messages": [{"role": "user", "content": "Hello!"}]}'`,
  ].join('\n');
  const curl = h('pre', { class: 'code', 'data-testid': 'key-curl' }, curlText);
  const copyButton = (text: string, target: HTMLElement, testid: string, label: string): HTMLButtonElement => {
    const button = h('button', { type: 'button', class: 'btn btn-small', 'data-testid': testid }, label);
    button.addEventListener(
      'click',
      asyncListener(async () => {
        const ok = await copyText(text, target);
        toast(ok ? 'Copied to the clipboard.' : 'Selected: press Ctrl+C (⌘C on a Mac) to copy.');
      }),
    );
    return button;
  };
  const done = h(
    'button',
    { type: 'button', class: 'btn btn-primary', 'data-testid': 'key-secret-close', onclick: close },
    'Done, I saved it',
  );
  const panel = h(
    'section',
    { class: 'card secret-panel', role: 'region', 'aria-label': 'Your new API key', 'data-testid': 'key-secret-panel' },
    h('h2', null, `Key “${key.name}” created`),
    h('p', { class: 'alert alert-warn' }, 'Copy the secret now. It is shown only once: we store a digest, not the key.'),
    h('div', { class: 'secret-row' }, secret, copyButton(key.secret, secret, 'key-copy', 'Copy')),
    h('h3', null, 'Use it'),
    h(
      'dl',
      { class: 'kv' },
      h('dt', null, 'Chat-completions SDKs (OpenAI-compatible) — base URL'),
      h('dd', null, h('code', { 'data-testid': 'base-url-chat' }, urls.chatCompletions)),
      h('dt', null, 'Messages SDKs (Anthropic-compatible) — base URL'),
      h('dd', null, h('code', { 'data-testid': 'base-url-messages' }, urls.messages)),
    ),
    h(
      'div',
      { class: 'code-head' },
      h('span', { class: 'muted small' }, 'Try it with curl'),
      copyButton(curlText, curl, 'key-curl-copy', 'Copy'),
    ),
    curl,
    h('div', { class: 'actions-row' }, done),
  );
  return panel;
}
