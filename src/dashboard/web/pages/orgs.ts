// Organizations: the ones you belong to (switch the active one), the active one's credits, and a
// form to create one. A user with no organization lands here.
import { api, messageOf, OrgRef } from '../api';
import { asyncListener, field, h, mount, showError, toast } from '../dom';
import { formatCredits } from '../format';
import { card, PageContext, pageHead } from '../page';
import { navigate, refreshSession, store, switchOrg } from '../state';

export function renderOrgs(root: HTMLElement, ctx: PageContext): void {
  const session = store.session!;
  const active = session.activeOrg;
  const hasOrgs = session.organizations.length > 0;

  const name = h('input', {
    type: 'text',
    required: true,
    maxlength: '100',
    autocomplete: 'organization',
    placeholder: 'Acme Inc.',
    'data-testid': 'org-name',
  });
  const create = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'org-create' }, 'Create organization');
  const createErrors = h('div', { class: 'form-errors' });
  const listErrors = h('div', { class: 'form-errors' });

  async function onCreate(event: SubmitEvent): Promise<void> {
    event.preventDefault();
    const value = name.value.trim();
    if (!value) return showError(createErrors, 'Give the organization a name.');
    create.disabled = true;
    showError(createErrors, null);
    try {
      const org = await api<OrgRef>('POST', '/organizations', { name: value });
      toast(`Created “${org.name}”. It is now your active organization.`);
      await refreshSession(); // the new organization is active: the router re-renders
      if (!hasOrgs) navigate('/keys'); // first one: next step is a key
    } catch (error) {
      if (!ctx.signal.aborted) showError(createErrors, messageOf(error));
    } finally {
      create.disabled = false;
    }
  }

  async function onSwitch(org: OrgRef, button: HTMLButtonElement): Promise<void> {
    button.disabled = true;
    try {
      await switchOrg(org.id);
      toast(`Switched to “${org.name}”.`);
    } catch (error) {
      if (!ctx.signal.aborted) showError(listErrors, messageOf(error));
      button.disabled = false;
    }
  }

  const credits = active
    ? h(
        'dl',
        { class: 'stats', 'data-testid': 'org-credits' },
        [
          ['Available', active.credits.available],
          ['Granted', active.credits.granted],
          ['Spent', active.credits.spent],
          ['Reserved', active.credits.reserved],
        ].map(([label, value]) =>
          h('div', { class: 'stat' }, h('dt', null, label as string), h('dd', null, formatCredits(value as number))),
        ),
      )
    : null;

  const list = h(
    'ul',
    { class: 'org-list', 'data-testid': 'orgs-list' },
    session.organizations.map((org) => {
      const isActive = org.id === active?.id;
      const button = h('button', { type: 'button', class: 'btn btn-small', 'data-testid': `org-switch-${org.id}` }, 'Switch to');
      button.addEventListener(
        'click',
        asyncListener(() => onSwitch(org, button)),
      );
      return h(
        'li',
        { class: isActive ? 'org-item active' : 'org-item' },
        h('span', { class: 'org-item-name' }, org.name),
        isActive ? h('span', { class: 'badge badge-ok' }, 'Active') : button,
      );
    }),
  );

  mount(
    root,
    pageHead('Organizations', 'Keys, usage and credits belong to an organization. Switch the active one at any time.'),
    hasOrgs
      ? null
      : h(
          'div',
          { class: 'alert alert-info', 'data-testid': 'orgs-empty' },
          'You are not in any organization yet. Create one to get API keys and use the playground.',
        ),
    active
      ? card(
          h('h2', null, `${active.name} credits`),
          credits,
          h('p', { class: 'muted small' }, '1 credit = 1 US dollar at the host’s list price. Credits are added by an operator.'),
        )
      : null,
    hasOrgs ? card(h('h2', null, 'Your organizations'), listErrors, list) : null,
    card(
      h('h2', null, hasOrgs ? 'New organization' : 'Create your first organization'),
      h('form', { class: 'inline-form', novalidate: true, onsubmit: asyncListener(onCreate) }, field('Name', name), create),
      createErrors,
    ),
  );
  if (!hasOrgs) name.focus();
}
