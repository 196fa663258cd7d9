// Members of the active organization: everyone sees who they are; owners add people by email,
// remove them, and choose which members may manage keys.
import { api, Member, messageOf } from '../api';
import { asyncListener, field, h, mount, select, showError, toast } from '../dom';
import { formatDateTime } from '../format';
import { actionsTable, card, PageContext, pageHead } from '../page';
import { store } from '../state';

export async function renderMembers(root: HTMLElement, ctx: PageContext): Promise<void> {
  const org = store.session!.activeOrg!;
  const isOwner = org.role === 'owner';
  const errors = h('div', { class: 'form-errors' });
  const tbody = h('tbody', null, h('tr', null, h('td', { colspan: '5', class: 'muted' }, 'Loading…')));
  let members: Member[] = [];

  /** Runs a change an owner made, then shows the list as it is now (or the refusal). */
  async function change(work: () => Promise<unknown>, done: string): Promise<void> {
    try {
      await work();
      showError(errors, null);
      toast(done);
      members = (await api<{ data: Member[] }>('GET', '/members', undefined, ctx.signal)).data;
    } catch (error) {
      if (ctx.signal.aborted) return;
      showError(errors, messageOf(error));
    }
    renderRows();
  }

  function renderRows(): void {
    tbody.replaceChildren(
      ...members.map((m) => {
        const who = m.email ?? m.userId;
        const access = h('input', {
          type: 'checkbox',
          checked: m.manageKeys,
          disabled: !isOwner || m.role === 'owner',
          'data-testid': `member-keys-${m.userId}`,
          'aria-label': `${who} may manage keys`,
        });
        access.addEventListener(
          'change',
          asyncListener(() =>
            change(
              () =>
                api('POST', `/members/${encodeURIComponent(m.userId)}/key-access`, { manageKeys: access.checked }, ctx.signal),
              access.checked ? `${who} may manage keys.` : `${who} no longer manages keys.`,
            ),
          ),
        );
        const actions = h('td', { class: 'actions' });
        if (isOwner) {
          actions.append(
            h(
              'button',
              {
                type: 'button',
                class: 'btn btn-small btn-danger-quiet',
                'data-testid': `member-remove-${m.userId}`,
                'aria-label': `Remove ${who}`,
                onclick: asyncListener(() =>
                  change(
                    () => api('POST', `/members/${encodeURIComponent(m.userId)}/remove`, undefined, ctx.signal),
                    `${who} removed.`,
                  ),
                ),
              },
              m.you ? 'Leave' : 'Remove',
            ),
          );
        }
        return h(
          'tr',
          { 'data-member-id': m.userId },
          h('td', { 'data-label': 'Member' }, who, m.you ? h('span', { class: 'muted' }, ' (you)') : null),
          h('td', { 'data-label': 'Role' }, m.role === 'owner' ? 'Owner' : 'Member'),
          h('td', { 'data-label': 'Manages keys' }, h('label', { class: 'check' }, access)),
          h('td', { 'data-label': 'Added', title: m.addedAt }, formatDateTime(m.addedAt)),
          actions,
        );
      }),
    );
  }

  const email = h('input', {
    type: 'email',
    required: true,
    placeholder: 'colleague@example.com',
    'data-testid': 'member-email',
  });
  const role = select(
    { 'data-testid': 'member-role', 'aria-label': 'Role' },
    [
      { value: 'member', label: 'Member' },
      { value: 'owner', label: 'Owner' },
    ],
    'member',
  );
  const manageKeys = h('input', { type: 'checkbox', 'data-testid': 'member-manage-keys' });
  const add = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'member-add' }, 'Add member');
  async function onAdd(event: SubmitEvent): Promise<void> {
    event.preventDefault();
    const value = email.value.trim();
    if (!value) return showError(errors, 'Give the email the person signed up with.');
    add.disabled = true;
    await change(
      () => api('POST', '/members', { email: value, role: role.value, manageKeys: manageKeys.checked }, ctx.signal),
      `${value} added.`,
    );
    email.value = '';
    role.value = 'member';
    manageKeys.checked = false;
    add.disabled = false;
  }
  const addForm = h(
    'form',
    { class: 'inline-form', novalidate: true, onsubmit: asyncListener(onAdd) },
    field('Email', email),
    field('Role', role),
    h('label', { class: 'check' }, manageKeys, ' May manage keys'),
    add,
  );

  mount(
    root,
    pageHead('Members', [
      'People in ',
      h('strong', null, org.name),
      '. Owners add and remove members and choose who may manage keys.',
    ]),
    isOwner
      ? card(h('h2', null, 'Add a member'), h('p', { class: 'muted small' }, 'They must have signed up first.'), addForm)
      : null,
    card(h('h2', null, 'Members'), errors, actionsTable('members-table', ['Member', 'Role', 'Manages keys', 'Added'], tbody)),
  );
  members = (await api<{ data: Member[] }>('GET', '/members', undefined, ctx.signal)).data;
  renderRows();
}
