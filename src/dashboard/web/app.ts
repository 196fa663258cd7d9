// The dashboard's entry: loads the config and session, draws the signed-in shell (header with
// organization, credits and navigation), and routes by hash (#/keys, #/usage, ...).
import { api, ApiError, Config, isAbort, messageOf, setUnauthorizedHandler } from './api';
import { asyncListener, errorBox, h, toast } from './dom';
import { formatCredits } from './format';
import { Page, PageContext } from './page';
import { renderAuth } from './pages/auth';
import { renderBilling } from './pages/billing';
import { renderKeys } from './pages/keys';
import { renderMembers } from './pages/members';
import { renderOrgs } from './pages/orgs';
import { renderPlayground, resetPlayground } from './pages/playground';
import { renderUsage } from './pages/usage';
import { navigate, onSessionChange, refreshSession, setSession, store, switchOrg } from './state';

const ROUTES: Record<string, { title: string; render: Page }> = {
  '/keys': { title: 'API keys', render: renderKeys },
  '/usage': { title: 'Usage', render: renderUsage },
  '/members': { title: 'Members', render: renderMembers },
  '/billing': { title: 'Billing', render: renderBilling },
  '/playground': { title: 'Playground', render: renderPlayground },
  '/orgs': { title: 'Organizations', render: renderOrgs },
};
const NAV: [path: string, label: string, testid: string][] = [
  ['/keys', 'API keys', 'nav-keys'],
  ['/usage', 'Usage', 'nav-usage'],
  ['/playground', 'Playground', 'nav-playground'],
  ['/members', 'Members', 'nav-members'],
  ['/billing', 'Billing', 'nav-billing'],
  ['/orgs', 'Organizations', 'nav-orgs'],
];

const app = document.getElementById('app')!;
let returnTo: string | null = null; // where a signed-out visitor was going
let authNotice: string | undefined;
let lastEmail = ''; // prefilled after a session expires
let focusAfterRender: string | null = null;

// --- the page lifecycle: each render gets a signal aborted (and cleanups run) when it is left ---

let leaving: { controller: AbortController; cleanups: (() => void)[] } | null = null;

function leavePage(): void {
  if (!leaving) return;
  leaving.controller.abort();
  for (const fn of leaving.cleanups) fn();
  leaving = null;
}

function parseHash(): { path: string; params: URLSearchParams; full: string } {
  const full = location.hash.replace(/^#/, '') || '/';
  const q = full.indexOf('?');
  return { path: q < 0 ? full : full.slice(0, q), params: new URLSearchParams(q < 0 ? '' : full.slice(q + 1)), full };
}

const routeOf = (path: string) => (Object.hasOwn(ROUTES, path) ? ROUTES[path] : null); // not inherited keys like "constructor"

const redirect = (path: string): void => location.replace(`#${path}`); // fires hashchange, adds no history entry

async function renderRoute(moveFocus = false): Promise<void> {
  leavePage();
  const { path, params, full } = parseHash();
  const controller = new AbortController();
  const cleanups: (() => void)[] = [];
  leaving = { controller, cleanups };
  const ctx: PageContext = { signal: controller.signal, params, onCleanup: (fn) => cleanups.push(fn) };
  const session = store.session;

  if (!session) {
    shell = null;
    if (path !== '/signin') {
      if (path !== '/') returnTo = full;
      return redirect('/signin');
    }
    document.title = 'Sign in · Model Gateway';
    renderAuth(app, ctx, authNotice, lastEmail);
    authNotice = undefined;
    return;
  }
  const route = routeOf(path);
  if (!route) {
    const target = returnTo && routeOf(returnTo.split('?')[0]) ? returnTo : '/keys';
    returnTo = null;
    return redirect(target);
  }
  if (!session.activeOrg && path !== '/orgs') return redirect('/orgs'); // everything else needs an organization

  const { main } = ensureShell();
  updateHeader(path);
  setMenu(false); // the phone menu closes on navigation
  document.title = `${route.title} · Model Gateway`;
  main.replaceChildren();
  main.setAttribute('aria-busy', 'true');
  try {
    const rendering = route.render(main, ctx);
    if (focusAfterRender) {
      main.querySelector<HTMLElement>(`[data-testid="${focusAfterRender}"]`)?.focus();
      focusAfterRender = null;
    } else if (moveFocus && !main.contains(document.activeElement)) {
      main.querySelector<HTMLElement>('h1')?.focus({ preventScroll: true });
    }
    await rendering;
  } catch (error) {
    if (!controller.signal.aborted && !isAbort(error)) main.append(errorBox(messageOf(error)));
  } finally {
    if (!controller.signal.aborted) main.removeAttribute('aria-busy');
  }
}

// --- the signed-in shell ---

interface Shell {
  main: HTMLElement;
  orgName: HTMLElement;
  credits: HTMLElement;
  switcher: HTMLSelectElement;
  email: HTMLElement;
  menu: HTMLElement;
  toggle: HTMLButtonElement;
  links: Map<string, HTMLAnchorElement>;
}
let shell: Shell | null = null;

function ensureShell(): Shell {
  if (shell) return shell;
  const links = new Map(NAV.map(([path, label, testid]) => [path, h('a', { href: `#${path}`, 'data-testid': testid }, label)]));
  const switcher = h('select', { 'aria-label': 'Active organization', 'data-testid': 'org-switcher' });
  switcher.addEventListener(
    'change',
    asyncListener(async () => {
      const previous = store.session?.activeOrg?.id ?? '';
      switcher.disabled = true;
      try {
        await switchOrg(switcher.value); // the session listener re-renders the page
      } catch (error) {
        switcher.value = previous;
        toast(messageOf(error), 'error');
      } finally {
        switcher.disabled = false;
      }
    }),
  );
  const toggle = h(
    'button',
    { type: 'button', class: 'nav-toggle', 'aria-expanded': 'false', 'aria-controls': 'menu', 'data-testid': 'nav-toggle' },
    h('span', { class: 'sr-only' }, 'Menu'),
    h('span', { class: 'burger', 'aria-hidden': 'true' }),
  );
  const menu = h(
    'div',
    { class: 'menu', id: 'menu' },
    h('nav', { class: 'nav', 'aria-label': 'Main' }, [...links.values()]),
    h(
      'div',
      { class: 'account' },
      switcher,
      h(
        'button',
        { type: 'button', class: 'btn btn-small', 'data-testid': 'org-new', onclick: newOrganization },
        '+ New organization',
      ),
      h('span', { class: 'email muted', 'data-testid': 'user-email' }),
      h(
        'button',
        { type: 'button', class: 'btn btn-small btn-quiet', 'data-testid': 'signout', onclick: asyncListener(signOut) },
        'Sign out',
      ),
    ),
  );
  toggle.addEventListener('click', () => setMenu(toggle.getAttribute('aria-expanded') !== 'true'));
  const orgName = h('span', { class: 'org-name', 'data-testid': 'org-active-name' });
  const credits = h('strong', { 'data-testid': 'credits-available' });
  const main = h('main', { id: 'main', class: 'main' });
  app.replaceChildren(
    h(
      'a',
      { class: 'skip-link', href: '#main', onclick: (e: Event) => (e.preventDefault(), main.querySelector('h1')?.focus()) },
      'Skip to content',
    ),
    h(
      'header',
      { class: 'topbar' },
      h(
        'div',
        { class: 'topbar-row' },
        h(
          'a',
          { class: 'brand', href: '#/keys', 'aria-label': 'Model Gateway' },
          h('span', { class: 'brand-mark', 'aria-hidden': 'true' }),
          h('span', { class: 'brand-text' }, 'Model Gateway'),
        ),
        h(
          'div',
          { class: 'org-summary', 'aria-live': 'polite' },
          orgName,
          h('span', { class: 'credits' }, credits, ' credits available'),
        ),
        toggle,
      ),
      menu,
    ),
    main,
  );
  shell = { main, orgName, credits, switcher, email: menu.querySelector('.email')!, menu, toggle, links };
  return shell;
}

function setMenu(open: boolean): void {
  if (!shell) return;
  shell.toggle.setAttribute('aria-expanded', String(open));
  shell.menu.classList.toggle('open', open);
}

function updateHeader(path = parseHash().path): void {
  const session = store.session;
  if (!shell || !session) return;
  const active = session.activeOrg;
  shell.orgName.textContent = active ? active.name : 'No organization';
  shell.credits.textContent = active ? formatCredits(active.credits.available) : '0';
  shell.credits.parentElement!.hidden = !active;
  shell.switcher.replaceChildren(
    ...(active ? [] : [h('option', { value: '' }, 'Choose an organization')]),
    ...session.organizations.map((o) => h('option', { value: o.id }, o.name)),
  );
  shell.switcher.value = active?.id ?? '';
  shell.switcher.hidden = session.organizations.length === 0;
  shell.email.textContent = session.user.email;
  for (const [p, link] of shell.links) {
    if (p === path) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

function newOrganization(): void {
  if (parseHash().path === '/orgs') {
    setMenu(false);
    document.querySelector<HTMLElement>('[data-testid="org-name"]')?.focus();
    return;
  }
  focusAfterRender = 'org-name';
  navigate('/orgs');
}

function signedOut(notice?: string): void {
  resetPlayground();
  authNotice = notice;
  lastEmail = notice ? (store.session?.user.email ?? '') : '';
  setSession(null);
}

async function signOut(): Promise<void> {
  try {
    await api('POST', '/signout');
  } catch (error) {
    // Already signed out (401) is fine; anything else means the cookie may still be live.
    if (!(error instanceof ApiError && error.status === 401)) return toast(messageOf(error), 'error');
  }
  signedOut();
  returnTo = null; // signing out on purpose: the next sign-in starts fresh
}

// --- wiring ---

onSessionChange((previous) => {
  const session = store.session;
  if (!session || !previous || previous.user.id !== session.user.id) {
    if (previous && session && previous.user.id !== session.user.id) resetPlayground();
    void renderRoute(true); // signed in or out: the whole view changes
  } else if (previous.activeOrg?.id !== session.activeOrg?.id) {
    void renderRoute(); // another organization: its keys, usage and credits
  } else {
    updateHeader(); // same organization: fresh credits
  }
});

setUnauthorizedHandler(() => {
  if (store.session) signedOut('Your session has ended. Sign in again to continue.');
});

window.addEventListener('hashchange', () => {
  void renderRoute(true);
  // Credits move outside this page too (operators grant, keys spend): show them fresh on every page.
  if (store.session) refreshSession().catch(() => undefined);
});

// Coming back to the tab: credits (or the active organization) may have changed elsewhere.
document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && store.session) refreshSession().catch(() => undefined);
});

async function boot(): Promise<void> {
  try {
    const config = await api<Config>('GET', '/config');
    // Base URLs without an origin are on this one (the service shows paths unless told its public address).
    const absolute = (url: string) => (url.startsWith('/') ? `${window.location.origin}${url}` : url);
    store.config = {
      ...config,
      baseUrls: { chatCompletions: absolute(config.baseUrls.chatCompletions), messages: absolute(config.baseUrls.messages) },
    };
  } catch (error) {
    app.replaceChildren(
      h(
        'main',
        { class: 'auth' },
        h(
          'div',
          { class: 'auth-card card' },
          errorBox(`The dashboard could not start: ${messageOf(error)}`),
          h('button', { class: 'btn', onclick: () => location.reload() }, 'Try again'),
        ),
      ),
    );
    return;
  }
  try {
    await refreshSession(); // renders through the session listener
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) authNotice = messageOf(error);
    void renderRoute();
  }
}

void boot();
