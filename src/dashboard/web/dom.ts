// Tiny DOM helpers. All text goes in as text nodes (never innerHTML), so server data cannot inject markup.
import { isAbort, messageOf } from './api';

export type Child = Node | string | number | null | undefined | false | Child[];
/** `on<event>` attributes take a listener of that event (`onsubmit` gets a SubmitEvent, …). */
type Listeners = { [K in keyof GlobalEventHandlersEventMap as `on${K}`]?: (event: GlobalEventHandlersEventMap[K]) => void };
/** Other attributes: text, numbers, or booleans (true: present, false or null: absent). */
export type Attrs = Listeners & Record<string, string | number | boolean | null | undefined | ((event: never) => void)>;

function applyAttrs(el: Element, attrs: Attrs | null | undefined): void {
  if (!attrs) return;
  for (const [name, value] of Object.entries(attrs)) {
    if (value == null || value === false) continue;
    if (typeof value === 'function') el.addEventListener(name.slice(2), value as EventListener);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
}

function appendChildren(parent: Node, children: Child[]): void {
  for (const child of children) {
    if (child == null || child === false) continue;
    if (Array.isArray(child)) appendChildren(parent, child);
    else parent.appendChild(typeof child === 'object' ? child : document.createTextNode(String(child)));
  }
}

/** An HTML element: `h('button', { class: 'primary', onclick: go }, 'Go')`. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  applyAttrs(el, attrs);
  appendChildren(el, children);
  return el;
}

/** An SVG element (needs the SVG namespace to render). */
export function s<K extends keyof SVGElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): SVGElementTagNameMap[K] {
  const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
  applyAttrs(el, attrs);
  appendChildren(el, children);
  return el;
}

/** A <select> with its options; `value` is set after the options exist, or it would not stick. */
export function select(attrs: Attrs, options: { value: string; label: string }[], value: string): HTMLSelectElement {
  const el = h(
    'select',
    attrs,
    options.map((o) => h('option', { value: o.value }, o.label)),
  );
  el.value = value;
  return el;
}

/** A label wrapping its control, so the pair needs no generated ids. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLLabelElement {
  return h(
    'label',
    { class: 'field' },
    h('span', { class: 'field-label' }, label),
    control,
    hint ? h('span', { class: 'field-hint' }, hint) : null,
  );
}

/** An inline error; role=alert so screen readers announce it when it appears. */
export function errorBox(message: string): HTMLElement {
  return h('div', { class: 'alert alert-error', role: 'alert' }, message);
}

/** Replaces a slot's content with an error (or clears it with null). */
export function showError(slot: HTMLElement, message: string | null): void {
  if (message) slot.replaceChildren(errorBox(message));
  else slot.replaceChildren();
}

/**
 * An async function as an event listener (an `on…` attribute, addEventListener): a listener's
 * promise goes nowhere, so a failure the function did not handle itself is reported here, as an
 * error toast, rather than lost. Leaving the page (an abort) is not a failure.
 */
export function asyncListener<E extends Event>(handler: (event: E) => Promise<void>): (event: E) => void {
  return (event) => {
    handler(event).catch((error: unknown) => {
      if (!isAbort(error)) toast(messageOf(error), 'error');
    });
  };
}

let toastRegion: HTMLElement | null = null;

/** A short, polite notice at the bottom of the screen ("Copied", "Key revoked"). */
export function toast(message: string, kind: 'info' | 'error' = 'info'): void {
  if (!toastRegion) {
    toastRegion = h('div', { class: 'toasts', role: 'status', 'aria-live': 'polite' });
    document.body.append(toastRegion);
  }
  const item = h('div', { class: `toast toast-${kind}` }, message);
  toastRegion.append(item);
  setTimeout(() => item.remove(), 4000);
}

/** Copies text; falls back to selecting `target` (and execCommand) where the Clipboard API is missing (plain-HTTP hosts). */
export async function copyText(text: string, target: HTMLElement): Promise<boolean> {
  try {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return true;
    }
  } catch {
    // Permission refused: fall through to the selection fallback.
  }
  selectContents(target);
  try {
    return document.execCommand('copy');
  } catch {
    return false;
  }
}

export function selectContents(el: HTMLElement): void {
  const range = document.createRange();
  range.selectNodeContents(el);
  const selection = window.getSelection();
  selection?.removeAllRanges();
  selection?.addRange(range);
}

/** Replaces an element's content; accepts the same children as h() (null and false are skipped). */
export function mount(parent: Element, ...children: Child[]): void {
  parent.replaceChildren();
  appendChildren(parent, children);
}
