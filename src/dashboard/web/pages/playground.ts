// The playground: a multi-turn chat with any model, billed to the active organization. Replies
// stream token by token; Stop aborts the request. The conversation lives in memory (not the DOM),
// so leaving the page and coming back keeps it; signing out clears it.
import { isAbort, messageOf, Model, request, StreamDelta, StreamDone, StreamError } from '../api';
import { asyncListener, field, h, mount, select, showError } from '../dom';
import { formatCost, formatInt } from '../format';
import { card, PageContext, pageHead } from '../page';
import { readSse } from '../sse';
import { getModels, refreshSession } from '../state';

interface Turn {
  user: string;
  reply: string;
  state: 'streaming' | 'done' | 'stopped' | 'error';
  /** Tokens and cost, from the `done` event. */
  meta: string;
  error: string;
}

interface TurnView {
  bubble: HTMLElement;
  text: Text;
  meta: HTMLElement;
}

/** A stream event's data; its fields are checked before use (a proxy or another server version may differ). */
type StreamData = Partial<StreamDelta & StreamDone & StreamError> | null;

const MODEL_KEY = 'mg.playground.model';
const conversation = { turns: [] as Turn[], system: '', maxTokens: '' };
let active: AbortController | null = null;

/** Forgets everything (sign-out, another user). */
export function resetPlayground(): void {
  active?.abort();
  active = null;
  conversation.turns = [];
  conversation.system = '';
  conversation.maxTokens = '';
}

const remembered = (): string => {
  try {
    return localStorage.getItem(MODEL_KEY) ?? '';
  } catch {
    return ''; // storage blocked (private mode): not worth an error
  }
};

export async function renderPlayground(root: HTMLElement, ctx: PageContext): Promise<void> {
  // Leaving the page stops a reply in progress; what arrived so far stays in the conversation.
  ctx.onCleanup(() => {
    active?.abort();
    active = null;
  });

  const modelSelect = select({ 'data-testid': 'playground-model' }, [], '');
  const system = h('textarea', { rows: '4', placeholder: 'You are a helpful assistant.', 'data-testid': 'playground-system' });
  system.value = conversation.system;
  system.addEventListener('input', () => (conversation.system = system.value));
  const maxTokens = h('input', {
    type: 'number',
    min: '1',
    max: '100000',
    step: '1',
    inputmode: 'numeric',
    placeholder: 'Model default',
    'data-testid': 'playground-max-tokens',
  });
  maxTokens.value = conversation.maxTokens;
  maxTokens.addEventListener('input', () => (conversation.maxTokens = maxTokens.value));
  const clear = h('button', { type: 'button', class: 'btn btn-small', 'data-testid': 'playground-clear' }, 'Clear conversation');

  const list = h('div', { class: 'messages', role: 'log', 'aria-label': 'Conversation', 'data-testid': 'playground-messages' });
  const errors = h('div', { class: 'form-errors' });
  const input = h('textarea', {
    rows: '3',
    placeholder: 'Send a message (Enter to send, Shift+Enter for a new line)',
    'aria-label': 'Message',
    'data-testid': 'playground-input',
  });
  const send = h('button', { type: 'submit', class: 'btn btn-primary', 'data-testid': 'playground-send' }, 'Send');
  const stop = h(
    'button',
    { type: 'button', class: 'btn', disabled: true, 'data-testid': 'playground-stop', onclick: () => active?.abort() },
    'Stop',
  );

  const setStreaming = (on: boolean): void => {
    send.disabled = on;
    stop.disabled = !on;
    clear.disabled = on;
    if (on)
      list.setAttribute('aria-busy', 'true'); // screen readers read the reply once, when complete
    else list.removeAttribute('aria-busy');
  };

  const nearBottom = (): boolean => list.scrollHeight - list.scrollTop - list.clientHeight < 48;
  const toBottom = (): void => void (list.scrollTop = list.scrollHeight);

  function paint(view: TurnView, turn: Turn): void {
    view.bubble.classList.toggle('pending', turn.state === 'streaming' && !turn.reply);
    view.bubble.hidden = turn.state !== 'streaming' && !turn.reply;
    if (turn.state === 'error') {
      view.meta.className = 'meta meta-error';
      view.meta.setAttribute('role', 'alert');
      view.meta.replaceChildren(h('span', { 'data-testid': 'playground-error' }, turn.error));
    } else {
      view.meta.className = 'meta';
      view.meta.textContent = turn.state === 'done' ? turn.meta : turn.state === 'stopped' ? 'Stopped.' : '';
    }
  }

  function appendTurn(turn: Turn, latest: boolean): TurnView {
    if (latest)
      list
        .querySelectorAll('[data-testid="playground-reply"], [data-testid="playground-meta"]')
        .forEach((e) => e.removeAttribute('data-testid'));
    const text = document.createTextNode(turn.reply);
    const view: TurnView = {
      bubble: h('div', { class: 'bubble', 'data-testid': latest ? 'playground-reply' : null }, text),
      text,
      meta: h('div', { class: 'meta', 'data-testid': latest ? 'playground-meta' : null }),
    };
    list.querySelector('.messages-empty')?.remove();
    list.append(
      h('div', { class: 'msg msg-user' }, h('div', { class: 'msg-role' }, 'You'), h('div', { class: 'bubble' }, turn.user)),
      h('div', { class: 'msg msg-assistant' }, h('div', { class: 'msg-role' }, 'Assistant'), view.bubble, view.meta),
    );
    paint(view, turn);
    return view;
  }

  function renderConversation(): void {
    list.replaceChildren();
    if (conversation.turns.length === 0) {
      list.append(
        h('p', { class: 'messages-empty muted' }, 'Pick a model and send a message. Replies stream in as they are generated.'),
      );
    }
    conversation.turns.forEach((turn, i) => appendTurn(turn, i === conversation.turns.length - 1));
    toBottom();
  }

  async function onSend(event?: Event): Promise<void> {
    event?.preventDefault();
    const content = input.value.trim();
    if (!content || active) return;
    if (!modelSelect.value) return showError(errors, 'Pick a model first.');
    showError(errors, null);

    // Only exchanges with a reply go back to the model: a turn that failed empty-handed is shown, not sent.
    const messages = conversation.turns.flatMap((t) =>
      t.reply
        ? [
            { role: 'user', content: t.user },
            { role: 'assistant', content: t.reply },
          ]
        : [],
    );
    messages.push({ role: 'user', content });
    const limit = Number.parseInt(conversation.maxTokens, 10);
    const body = {
      model: modelSelect.value,
      messages,
      ...(conversation.system.trim() ? { system: conversation.system } : {}),
      ...(limit > 0 ? { max_tokens: limit } : {}),
    };

    const turn: Turn = { user: content, reply: '', state: 'streaming', meta: '', error: '' };
    conversation.turns.push(turn);
    input.value = '';
    const view = appendTurn(turn, true);
    toBottom();
    const controller = new AbortController();
    active = controller;
    setStreaming(true);
    try {
      const res = await request('POST', '/playground', body, controller.signal, 'text/event-stream');
      if (!res.body) throw new Error('This browser cannot read streamed replies.');
      await readSse(res.body, ({ event, data }) => {
        let payload: StreamData;
        try {
          payload = JSON.parse(data) as StreamData;
        } catch {
          return;
        }
        if (event === 'delta' && typeof payload?.text === 'string') {
          const follow = nearBottom();
          turn.reply += payload.text;
          view.text.appendData(payload.text);
          view.bubble.classList.remove('pending');
          if (follow) toBottom();
        } else if (event === 'done') {
          turn.state = 'done';
          turn.meta = describeDone(payload);
          return true;
        } else if (event === 'error') {
          turn.state = 'error';
          turn.error = payload?.error?.message ?? 'The model failed to answer.';
          return true;
        }
      });
      if (turn.state === 'streaming') {
        turn.state = 'error';
        turn.error = 'The connection closed before the reply was complete.';
      }
    } catch (error) {
      turn.state = isAbort(error) ? 'stopped' : 'error';
      turn.error = isAbort(error) ? '' : messageOf(error);
    } finally {
      if (active === controller) active = null;
      paint(view, turn);
      setStreaming(false);
      // Nothing came back: hand the message back for another try.
      if (!turn.reply && turn.state !== 'done' && !input.value) input.value = turn.user;
      if (!ctx.signal.aborted) input.focus();
      refreshSession().catch(() => undefined); // the header's credits
    }
  }

  clear.addEventListener('click', () => {
    conversation.turns = [];
    renderConversation();
    input.focus();
  });
  input.addEventListener('keydown', (e: KeyboardEvent) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) void onSend(e);
  });
  modelSelect.addEventListener('change', () => {
    try {
      localStorage.setItem(MODEL_KEY, modelSelect.value);
    } catch {
      // storage blocked: the choice just is not remembered
    }
  });

  mount(
    root,
    pageHead('Playground', 'Try any model. Replies are billed to the active organization like API requests.'),
    h(
      'div',
      { class: 'playground' },
      card(
        h('h2', { class: 'sr-only' }, 'Settings'),
        field('Model', modelSelect),
        field('System prompt (optional)', system),
        field('Max tokens (optional)', maxTokens),
        clear,
      ),
      h(
        'section',
        { class: 'card chat' },
        h('h2', { class: 'sr-only' }, 'Conversation'),
        list,
        errors,
        h(
          'form',
          { class: 'composer', onsubmit: asyncListener(onSend) },
          input,
          h('div', { class: 'composer-actions' }, stop, send),
        ),
      ),
    ),
  );
  renderConversation();
  setStreaming(false);
  send.disabled = true; // until the models are known

  let models: Model[] = [];
  try {
    // Embedding models serve POST /embeddings only: nothing to converse with.
    models = (await getModels()).filter((m) => m.kind !== 'embedding');
  } catch (error) {
    if (!ctx.signal.aborted) showError(errors, `Could not load the models: ${messageOf(error)}`);
    return;
  }
  if (ctx.signal.aborted) return;
  for (const m of models) modelSelect.append(h('option', { value: m.id }, m.name));
  const preferred = remembered();
  modelSelect.value = models.some((m) => m.id === preferred) ? preferred : (models[0]?.id ?? '');
  if (models.length === 0) return showError(errors, 'No models are available right now.');
  send.disabled = false;
  input.focus();
}

function describeDone(done: StreamData): string {
  const usage: Partial<StreamDone['usage']> = done?.usage ?? {};
  const parts = [
    `${formatInt(usage.input_tokens ?? 0)} input tokens`,
    ...(usage.cache_read_tokens ? [`${formatInt(usage.cache_read_tokens)} read from the cache`] : []),
    ...(usage.cache_write_tokens ? [`${formatInt(usage.cache_write_tokens)} written to the cache`] : []),
    `${formatInt(usage.output_tokens ?? 0)} output tokens`,
    typeof done?.cost === 'number' ? `${formatCost(done.cost, done.cost_nano)} credits` : 'not billed',
  ];
  if (done?.finish_reason && done.finish_reason !== 'stop' && done.finish_reason !== 'end_turn')
    parts.push(`ended: ${done.finish_reason}`);
  return parts.join(' · ');
}
