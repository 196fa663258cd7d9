// Sign in and sign up: one form, two modes. Sign-up is offered only when the server enables it.
import { api, ApiError, messageOf, setCsrf, User } from '../api';
import { asyncListener, field, h, mount, showError } from '../dom';
import { PageContext } from '../page';
import { refreshSession, store } from '../state';

export function renderAuth(root: HTMLElement, ctx: PageContext, notice?: string, knownEmail = ''): void {
  const signupEnabled = store.config?.signupEnabled ?? false;
  let mode: 'signin' | 'signup' = 'signin';
  let countdown: number | undefined;
  ctx.onCleanup(() => clearInterval(countdown));

  const title = h('h1', { tabindex: '-1' });
  const email = h('input', {
    type: 'email',
    name: 'email',
    required: true,
    autocomplete: 'username',
    'data-testid': 'signin-email',
  });
  const password = h('input', { type: 'password', name: 'password', required: true, 'data-testid': 'signin-password' });
  const passwordHint = h('span', { class: 'field-hint' });
  const submit = h('button', { type: 'submit', class: 'btn btn-primary btn-block', 'data-testid': 'signin-submit' });
  const errors = h('div', { class: 'form-errors' });
  const toggleText = h('span');
  const toggle = h('button', {
    type: 'button',
    class: 'btn-link',
    'data-testid': 'signup-toggle',
    onclick: () => setMode(mode === 'signin' ? 'signup' : 'signin'),
  });

  function setMode(next: 'signin' | 'signup'): void {
    mode = next;
    title.textContent = mode === 'signin' ? 'Sign in' : 'Create your account';
    submit.textContent = mode === 'signin' ? 'Sign in' : 'Create account';
    password.autocomplete = mode === 'signin' ? 'current-password' : 'new-password';
    password.minLength = mode === 'signup' ? 8 : 0;
    passwordHint.textContent = mode === 'signup' ? 'At least 8 characters.' : '';
    toggleText.textContent = mode === 'signin' ? 'No account yet? ' : 'Already have an account? ';
    toggle.textContent = mode === 'signin' ? 'Create one' : 'Sign in';
    if (countdown === undefined) showError(errors, null);
  }

  /** Throttled: say so, count down, and keep the button off until the wait is over. */
  function throttled(error: ApiError): void {
    clearInterval(countdown);
    let left = error.retryAfterSeconds ?? 60;
    const line = h('div', { class: 'alert alert-warn', role: 'alert', 'data-testid': 'signin-throttled' });
    const tick = (): void => {
      line.textContent = `Too many failed sign-in attempts. Try again in ${left} second${left === 1 ? '' : 's'}.`;
      if (left-- <= 0) {
        clearInterval(countdown);
        countdown = undefined;
        line.textContent = 'You can try signing in again now.';
        submit.disabled = false;
      }
    };
    submit.disabled = true;
    errors.replaceChildren(line);
    tick();
    countdown = window.setInterval(tick, 1000);
  }

  async function onSubmit(event: SubmitEvent): Promise<void> {
    event.preventDefault();
    if (!email.value.trim() || !password.value) return showError(errors, 'Enter your email and password.');
    if (mode === 'signup' && password.value.length < 8) return showError(errors, 'Choose a password of at least 8 characters.');
    showError(errors, null);
    submit.disabled = true;
    submit.setAttribute('aria-busy', 'true');
    try {
      const credentials = { email: email.value.trim(), password: password.value };
      // Signing up never starts a session (it answers alike whether or not the email had an account): sign in next.
      if (mode === 'signup') await api('POST', '/signup', credentials);
      const res = await api<{ user: User; csrf: string }>('POST', '/signin', credentials);
      setCsrf(res.csrf);
      await refreshSession(); // the router takes it from here
    } catch (error) {
      if (ctx.signal.aborted) return;
      if (error instanceof ApiError && error.status === 429) return throttled(error);
      showError(errors, messageOf(error));
      password.select();
    } finally {
      submit.removeAttribute('aria-busy');
      if (countdown === undefined) submit.disabled = false;
    }
  }

  setMode('signin');
  mount(
    root,
    h(
      'main',
      { class: 'auth', id: 'main' },
      h(
        'div',
        { class: 'auth-card card' },
        h('div', { class: 'brand brand-lg' }, h('span', { class: 'brand-mark', 'aria-hidden': 'true' }), 'Model Gateway'),
        title,
        notice ? h('div', { class: 'alert alert-info', role: 'status' }, notice) : null,
        h(
          'form',
          { class: 'stack', novalidate: true, onsubmit: asyncListener(onSubmit) },
          field('Email', email),
          h('label', { class: 'field' }, h('span', { class: 'field-label' }, 'Password'), password, passwordHint),
          errors,
          submit,
        ),
        signupEnabled ? h('p', { class: 'auth-switch muted' }, toggleText, toggle) : null,
      ),
    ),
  );
  email.value = knownEmail;
  (knownEmail ? password : email).focus();
}
