import { replyIdOf } from '../reply-id';
import { hostedToolItemClassOf, isHostedTool, RESPONSES_HOSTED_TOOL_ITEM_TYPES } from '../../canonical/hosted-tools';
import { ApiError, chatCompletionsError } from '../../http/api-error';
import { creditsNumber } from '../../ledger/money';
import type {
  CanonicalImage,
  CanonicalMessage,
  CanonicalRequest,
  CanonicalTool,
  CanonicalToolCall,
  CanonicalToolChoice,
  Citation,
  FinishReason,
  ToolsAsked,
} from '../../canonical/canonical';
import type { InferenceResult, PipelineEvent } from '../../inference/inference.command';
import type { Reply } from '../../inference/reduce';
import { allInputTokens, reasoningTokens, replyTokens } from '../reply-usage';
import { sseData, StreamSerializer } from '../sse';
import type {
  ContentPart,
  FunctionCallItem,
  FunctionCallOutputItem,
  FunctionTool,
  InputItem,
  MessageItem,
  NamespaceTool,
  ResponsesRequest,
  TextFormat,
} from './responses.schema';
import { withoutRouting } from '../../routing/preferences';

/** The Responses wire format, in and out. Pure translation; no I/O. */

/** A 400 naming the field at fault (`param` in the format's error body). */
const invalid = (message: string, param: string | null = null) => new ApiError('invalid_request', message, { param });

const STATELESS =
  'the gateway is stateless (it keeps no responses, conversations or files): send the whole conversation in "input"';

/** Fields that need state kept between requests, each refused with why. */
function refuseStateful(body: ResponsesRequest): void {
  if (body.previous_response_id != null)
    throw invalid(`previous_response_id is not supported: ${STATELESS}`, 'previous_response_id');
  if (body.conversation != null) throw invalid(`conversation is not supported: ${STATELESS}`, 'conversation');
  if (body.prompt != null) throw invalid(`prompt (a stored prompt template) is not supported: ${STATELESS}`, 'prompt');
  if (body.background === true) throw invalid(`background responses are not supported: ${STATELESS}`, 'background');
}

/** The text of a content (text, output text and refusal parts); images only where `images` takes them. */
function textOf(content: string | ContentPart[], at: string, images?: CanonicalImage[]): string {
  if (typeof content === 'string') return content;
  const texts: string[] = [];
  content.forEach((part, i) => {
    switch (part.type) {
      case 'input_text':
      case 'output_text':
        texts.push(part.text ?? '');
        return;
      case 'refusal':
        texts.push(part.refusal ?? '');
        return;
      case 'input_image':
        if (!images) throw invalid(`${at}[${i}]: images are carried in user messages only`, `${at}[${i}]`);
        images.push(imageOf(part, `${at}[${i}]`));
        return;
      default:
        throw invalid(
          `${at}[${i}]: content parts of type "${part.type}" are not supported (input_text, output_text and, in user messages, input_image are)`,
          `${at}[${i}].type`,
        );
    }
  });
  return texts.join('\n');
}

function imageOf(part: ContentPart, at: string): CanonicalImage {
  const url = part.image_url ?? '';
  if (url === '') {
    if (part.file_id) throw invalid(`${at}: images by file_id are not supported: ${STATELESS}; send image_url`, `${at}.file_id`);
    throw invalid(`${at}: an input_image needs image_url (an https: or data: URL)`, `${at}.image_url`);
  }
  if (!/^(https?:|data:image\/)/i.test(url))
    throw invalid(`${at}.image_url must be an http(s) URL or a data:image/… URL`, `${at}.image_url`);
  return { url };
}

/** A function call joins the assistant turn it follows (after that turn's text), or starts one. */
function addCall(messages: CanonicalMessage[], call: CanonicalToolCall): void {
  const last = messages[messages.length - 1];
  if (last?.role === 'assistant') last.toolCalls.push(call);
  else messages.push({ role: 'assistant', content: '', toolCalls: [call] });
}

function addItem(item: InputItem, at: string, system: string[], messages: CanonicalMessage[]): void {
  const type = item.type ?? 'message';
  switch (type) {
    case 'message': {
      const message = item as MessageItem;
      if (message.role === 'system' || message.role === 'developer') {
        const text = textOf(message.content, `${at}.content`);
        // Instructions before the conversation are the request's; later ones keep their place.
        if (messages.length === 0) system.push(text);
        else messages.push({ role: 'system', content: text });
      } else if (message.role === 'user') {
        const images: CanonicalImage[] = [];
        const content = textOf(message.content, `${at}.content`, images);
        messages.push(images.length > 0 ? { role: 'user', content, images } : { role: 'user', content });
      } else {
        messages.push({ role: 'assistant', content: textOf(message.content, `${at}.content`), toolCalls: [] });
      }
      return;
    }
    case 'function_call': {
      const call = item as FunctionCallItem;
      addCall(messages, { id: call.call_id, name: hostName(call.name, call.namespace), arguments: call.arguments });
      return;
    }
    case 'function_call_output': {
      const output = item as FunctionCallOutputItem;
      messages.push({ role: 'tool', toolCallId: output.call_id, content: textOf(output.output, `${at}.output`) });
      return;
    }
    case 'reasoning':
      // An earlier reply's reasoning, sent back: hosts are given none (its summary and encrypted content have no counterpart).
      return;
    case 'item_reference':
      throw invalid(`${at}: item_reference is not supported: ${STATELESS}`, `${at}.type`);
    default:
      // A hosted tool's call from an earlier reply (an openai-responses host's web_search_call…), sent
      // back: it stays in the body a host of this format is sent whole; translated, it has no
      // counterpart (the reply's text that followed it carries what it found).
      if (hostedToolItemClassOf(type) !== null) return;
      throw invalid(
        `${at}: input items of type "${type}" are not supported (messages, function_call, function_call_output, reasoning items and hosted tools' calls — ${RESPONSES_HOSTED_TOOL_ITEM_TYPES.join(', ')} — are)`,
        `${at}.type`,
      );
  }
}

/**
 * The hosted tools offered (`web_search`, `image_generation`…) and whether `tool_choice` requires
 * one (or any tool), for the one decision to rule on once the model's hosts are known (see hosted-tools.ts).
 */
function hostedToolsOf(body: ResponsesRequest): ToolsAsked | null {
  const tools = body.tools ?? [];
  const choice = body.tool_choice;
  const hosted = tools.map((t) => t.type).filter(isHostedTool);
  if (hosted.length === 0) return null;
  return {
    hosted,
    clientTools: tools.some((t) => !isHostedTool(t.type)),
    required:
      choice === 'required'
        ? 'any'
        : typeof choice === 'object' && choice != null && isHostedTool(choice.type)
          ? { hosted: choice.type }
          : null,
  };
}

function toolChoiceOf(choice: ResponsesRequest['tool_choice']): CanonicalToolChoice | undefined {
  if (choice == null) return undefined;
  if (typeof choice === 'string') return choice;
  // A hosted tool required is the request's hostedTools.required.
  if (isHostedTool(choice.type)) return undefined;
  if (choice.type === 'function' && choice.name)
    return { name: hostName(choice.name, (choice as { namespace?: string }).namespace) };
  if (choice.type === 'function') throw invalid('tool_choice of type "function" needs a "name"', 'tool_choice.name');
  throw invalid(
    `tool_choice of type "${choice.type}" is not supported: use "auto", "none", "required" or {"type": "function", "name": "…"}`,
    'tool_choice.type',
  );
}

/** Between a namespace and its function's name, in the name hosts see (`multi_agent__spawn_agent`). */
const NAMESPACE_SEPARATOR = '__';

/** A namespaced function's name as hosts see it, and what it stands for. */
export type ToolNames = Map<string, { namespace: string; name: string }>;

const canonicalTool = (tool: FunctionTool, name: string, namespace?: NamespaceTool): CanonicalTool => {
  const description = [namespace?.description, tool.description].filter((d): d is string => d != null && d !== '').join('\n\n');
  return {
    name,
    ...(description !== '' ? { description } : {}),
    parameters: tool.parameters ?? { type: 'object', properties: {} },
  };
};

/**
 * Function tools, and the functions of namespace tools under a joined name (which the reply splits
 * back into `namespace` and `name`). Hosted tools are left to hostedToolsOf; other types are
 * refused, each named once.
 */
function toolsOf(body: ResponsesRequest): { tools: CanonicalTool[]; names: ToolNames } {
  const tools: CanonicalTool[] = [];
  const names: ToolNames = new Map();
  const others = new Set<string>();
  for (const tool of body.tools ?? []) {
    if (tool.type === 'function') tools.push(canonicalTool(tool as FunctionTool, (tool as FunctionTool).name));
    else if (tool.type === 'namespace') {
      const namespace = tool as NamespaceTool;
      for (const inner of namespace.tools) {
        if (inner.type !== 'function') {
          others.add(`"${inner.type}" (in namespace "${namespace.name}")`);
          continue;
        }
        const joined = `${namespace.name}${NAMESPACE_SEPARATOR}${inner.name}`;
        names.set(joined, { namespace: namespace.name, name: inner.name });
        tools.push(canonicalTool(inner as FunctionTool, joined, namespace));
      }
    } else if (!isHostedTool(tool.type)) others.add(`"${tool.type}"`);
  }
  if (others.size > 0) {
    throw invalid(
      `tools of type ${[...others].join(', ')} are not supported: the gateway serves function tools (alone or in namespaces), and hosted tools on the hosts that run them`,
      'tools',
    );
  }
  const seen = new Set<string>();
  for (const { name } of tools) {
    if (seen.has(name))
      throw invalid(
        `two tools are named "${name}" (a namespace's functions are named namespace${NAMESPACE_SEPARATOR}function)`,
        'tools',
      );
    seen.add(name);
  }
  return { tools, names };
}

/** The name hosts know a function by: joined with its namespace when it has one. */
const hostName = (name: string, namespace?: string | null) => (namespace ? `${namespace}${NAMESPACE_SEPARATOR}${name}` : name);

/** `text.format` asking for JSON: any object, or what its named schema describes. */
function outputFormatOf(format: TextFormat | null | undefined): Pick<CanonicalRequest, 'outputFormat'> {
  if (format?.type === 'json_object') return { outputFormat: { type: 'json_object' } };
  if (format?.type !== 'json_schema' || !('schema' in format)) return {};
  const { schema, name, description, strict } = format;
  return {
    outputFormat: {
      type: 'json_schema',
      schema,
      name,
      ...(description !== undefined ? { description } : {}),
      ...(strict != null ? { strict } : {}),
    },
  };
}

export function toCanonical(body: ResponsesRequest): CanonicalRequest {
  refuseStateful(body);
  const hostedTools = hostedToolsOf(body);
  const { tools } = toolsOf(body);
  const system = body.instructions ? [body.instructions] : [];
  const messages: CanonicalMessage[] = [];
  const items: InputItem[] = typeof body.input === 'string' ? [{ role: 'user', content: body.input }] : body.input;
  items.forEach((item, i) => addItem(item, `input[${i}]`, system, messages));
  if (messages.length === 0) throw invalid('input must include at least one user, assistant or function_call item', 'input');
  const effort = body.reasoning?.effort;
  return {
    system: system.filter((s) => s !== ''),
    messages,
    tools,
    toolChoice: toolChoiceOf(body.tool_choice),
    ...(body.parallel_tool_calls === false ? { parallelToolCalls: false } : {}),
    // null is "not given" (some clients send it): the model's default applies.
    maxTokens: body.max_output_tokens ?? undefined,
    temperature: body.temperature ?? undefined,
    topP: body.top_p ?? undefined,
    stop: [],
    stream: body.stream === true,
    ...(effort != null ? { reasoning: { effort } } : {}),
    ...outputFormatOf(body.text?.format),
    original: { format: 'responses', body: withoutRouting(body) as unknown as Record<string, unknown> },
    ...(hostedTools ? { hostedTools } : {}),
  };
}

// ---- Out ----

/**
 * The request's settings as the reply reports them (the format echoes them). `store` is false
 * whatever was asked: nothing is kept.
 */
export function echoOf(body: ResponsesRequest) {
  return {
    instructions: body.instructions ?? null,
    max_output_tokens: body.max_output_tokens ?? null,
    metadata: body.metadata ?? {},
    parallel_tool_calls: body.parallel_tool_calls ?? true,
    previous_response_id: null,
    reasoning: { effort: body.reasoning?.effort ?? null, summary: body.reasoning?.summary ?? null },
    store: false,
    temperature: body.temperature ?? null,
    text: { format: body.text?.format ?? { type: 'text' }, ...(body.text?.verbosity ? { verbosity: body.text.verbosity } : {}) },
    tool_choice: body.tool_choice ?? 'auto',
    tools: body.tools ?? [],
    top_p: body.top_p ?? null,
    truncation: body.truncation ?? 'disabled',
    // A string when given, else left out: the format's `user` is never null.
    ...(body.user != null ? { user: body.user } : {}),
    ...(body.safety_identifier != null ? { safety_identifier: body.safety_identifier } : {}),
    ...(body.prompt_cache_key != null ? { prompt_cache_key: body.prompt_cache_key } : {}),
  };
}

export type Echo = ReturnType<typeof echoOf>;

/** What a reply needs from its request: the settings it echoes, and the namespaced functions' names. */
export interface ReplyContext {
  echo: Echo;
  names: ToolNames;
}

export const replyContextOf = (body: ResponsesRequest): ReplyContext => ({ echo: echoOf(body), names: toolsOf(body).names });

/** Why a reply is incomplete, for the finishes that make it so. */
const INCOMPLETE: Partial<Record<FinishReason, string>> = { length: 'max_output_tokens', content_filter: 'content_filter' };

const responseId = (result: InferenceResult) => replyIdOf('resp_', result.requestId);
const itemId = (result: InferenceResult, prefix: string, index: number) =>
  `${prefix}_${result.requestId.replace(/^req_/, '')}_${index}`;

/** Every input token in `input_tokens`, the cache's share in its details; output includes reasoning. */
function usageOf(reply: Pick<Reply, 'billed' | 'usage'>) {
  const tokens = replyTokens(reply);
  const input = allInputTokens(tokens);
  return {
    input_tokens: input,
    input_tokens_details: {
      cached_tokens: tokens.cacheReadTokens,
      cache_write_tokens: tokens.cacheWriteTokens + tokens.cacheWrite1hTokens,
    },
    output_tokens: tokens.outputTokens,
    output_tokens_details: { reasoning_tokens: reasoningTokens(reply) },
    total_tokens: input + tokens.outputTokens,
    ...(reply.billed ? { cost: creditsNumber(reply.billed.cost) } : {}),
  };
}

type ItemStatus = 'in_progress' | 'completed' | 'incomplete';

const outputText = (text: string, annotations: UrlCitation[] = []) => ({ type: 'output_text', text, annotations, logprobs: [] });

/** A page the host cited, as the format's annotation of a message's text (`offset`: where that text began in the reply's). */
type UrlCitation = ReturnType<typeof urlCitation>;
const urlCitation = (citation: Citation, offset: number) => ({
  type: 'url_citation' as const,
  start_index: citation.start - offset,
  end_index: citation.end - offset,
  url: citation.url,
  title: citation.title,
});

const reasoningItem = (id: string, text: string) => ({
  id,
  type: 'reasoning',
  summary: [],
  content: [{ type: 'reasoning_text', text }],
});

const messageItem = (id: string, text: string, status: ItemStatus, annotations: UrlCitation[] = []) => ({
  id,
  type: 'message',
  status,
  role: 'assistant',
  content: [outputText(text, annotations)],
});

/** A function call; one of a namespace's functions says which namespace, under its own name. */
const functionCallItem = (id: string, call: CanonicalToolCall, status: ItemStatus, names: ToolNames) => {
  const named = names.get(call.name);
  return {
    id,
    type: 'function_call',
    status,
    call_id: call.id,
    name: named?.name ?? call.name,
    ...(named ? { namespace: named.namespace } : {}),
    arguments: call.arguments,
  };
};

interface Ending {
  status: 'in_progress' | 'completed' | 'incomplete' | 'failed';
  output: unknown[];
  usage: ReturnType<typeof usageOf> | null;
  finish?: FinishReason;
  error?: { code: string; message: string };
}

function responseObject(result: InferenceResult, echo: Echo, ending: Ending) {
  const reason = ending.finish === undefined ? undefined : INCOMPLETE[ending.finish];
  return {
    id: responseId(result),
    object: 'response',
    created_at: result.created,
    status: ending.status,
    error: ending.error ?? null,
    incomplete_details: ending.status === 'incomplete' && reason ? { reason } : null,
    model: result.model.slug,
    output: ending.output,
    ...echo,
    // Left out until counted (a response in progress, or failed before any count): the format's usage is never null.
    ...(ending.usage ? { usage: ending.usage } : {}),
  };
}

/**
 * A host's own response object, passed through (a host speaking this format): under the slug, with
 * the cost added to its usage.
 */
function passedResponse(
  response: Record<string, unknown>,
  result: InferenceResult,
  reply: Pick<Reply, 'billed'>,
): Record<string, unknown> {
  const usage = response.usage;
  return {
    ...response,
    model: result.model.slug,
    ...(typeof usage === 'object' && usage !== null && reply.billed
      ? { usage: { ...usage, cost: creditsNumber(reply.billed.cost) } }
      : {}),
  };
}

/** A whole reply: its reasoning, its text (or an empty message when there is nothing else), its function calls. */
export function responseBody(result: InferenceResult, reply: Reply, { echo, names }: ReplyContext) {
  if (reply.passThrough) return passedResponse(reply.passThrough, result, reply);
  const incomplete = INCOMPLETE[reply.finish] !== undefined;
  const output: unknown[] = [];
  if (reply.reasoning !== '') output.push(reasoningItem(itemId(result, 'rs', output.length), reply.reasoning));
  if (reply.text !== '' || reply.toolCalls.length === 0) {
    const annotations = reply.citations.map((citation) => urlCitation(citation, 0));
    output.push(
      messageItem(itemId(result, 'msg', output.length), reply.text, incomplete ? 'incomplete' : 'completed', annotations),
    );
  }
  for (const call of reply.toolCalls)
    output.push(functionCallItem(itemId(result, 'fc', output.length), call, 'completed', names));
  return responseObject(result, echo, {
    status: incomplete ? 'incomplete' : 'completed',
    output,
    usage: usageOf(reply),
    finish: reply.finish,
  });
}

/** The format's error body: OpenAI's, as chat completions answer it (`param` names the field at fault when one is). */
export const responsesError = chatCompletionsError;

/** An output item being streamed: its place in `output`, and what it has gathered so far. */
interface StreamedItem {
  index: number;
  id: string;
  kind: 'reasoning' | 'message' | 'function_call';
  text: string;
  /** A message's place in the reply's text (where its text began), and the pages cited for it. */
  textStart: number;
  annotations: UrlCitation[];
  call: CanonicalToolCall;
  /** Set once its done events have gone out. */
  status: ItemStatus;
}

/**
 * The event sequence: response.created and response.in_progress; then each output item in turn
 * (output_item.added, for text and reasoning a content part with its deltas, for a function call
 * its argument deltas, each closed with its .done events and output_item.done); then
 * response.completed, or response.incomplete when a cap or a filter cut the reply. A failure
 * after the start is an `error` event followed by response.failed. Every event carries
 * `sequence_number`, counted from 0 in the order written.
 */
export function eventSerializer(result: InferenceResult, { echo, names }: ReplyContext): StreamSerializer {
  let sequence = 0;
  let started = false;
  const items: StreamedItem[] = [];
  /** The open reasoning or message item (function calls stay open until the reply ends: a host may interleave them). */
  let current: StreamedItem | null = null;
  const calls = new Map<number, StreamedItem>();
  /** Characters of the reply's text so far (what citations count in). */
  let textLength = 0;
  let finish: FinishReason | undefined;
  let usage: Reply['usage'] = null;
  let billed: Reply['billed'] = null;
  /** The host speaks this format: its own events go out (under the slug), none of the translation. */
  let passingThrough = false;
  /** The host's closing event (response.completed or .incomplete), held until the reply is billed, for its cost. */
  let hostEnd: { event?: string; data: Record<string, unknown> } | null = null;

  const emit = (type: string, payload: Record<string, unknown>) =>
    sseData({ type, sequence_number: sequence++, ...payload }, type);
  const itemObject = (item: StreamedItem, status: ItemStatus) =>
    item.kind === 'reasoning'
      ? reasoningItem(item.id, item.text)
      : item.kind === 'message'
        ? messageItem(item.id, item.text, status, item.annotations)
        : functionCallItem(item.id, item.call, status, names);
  const snapshot = (status: Ending['status'], extra: Partial<Ending> = {}) =>
    responseObject(result, echo, {
      status,
      output: items.map((item) => itemObject(item, item.status === 'in_progress' ? 'incomplete' : item.status)),
      usage: null,
      ...extra,
    });
  const preamble = () => {
    if (started) return '';
    started = true;
    const response = responseObject(result, echo, { status: 'in_progress', output: [], usage: null });
    return emit('response.created', { response }) + emit('response.in_progress', { response });
  };

  const open = (kind: StreamedItem['kind'], call?: CanonicalToolCall): [StreamedItem, string] => {
    const index = items.length;
    const prefix = kind === 'reasoning' ? 'rs' : kind === 'message' ? 'msg' : 'fc';
    const item: StreamedItem = {
      index,
      id: itemId(result, prefix, index),
      kind,
      text: '',
      textStart: textLength,
      annotations: [],
      call: call ?? { id: '', name: '', arguments: '' },
      status: 'in_progress',
    };
    items.push(item);
    const added =
      kind === 'reasoning'
        ? { id: item.id, type: 'reasoning', summary: [], content: [] }
        : kind === 'message'
          ? { id: item.id, type: 'message', status: 'in_progress', role: 'assistant', content: [] }
          : functionCallItem(item.id, item.call, 'in_progress', names);
    let text = emit('response.output_item.added', { output_index: index, item: added });
    const at = { item_id: item.id, output_index: index, content_index: 0 };
    if (kind === 'reasoning') text += emit('response.content_part.added', { ...at, part: { type: 'reasoning_text', text: '' } });
    if (kind === 'message') text += emit('response.content_part.added', { ...at, part: outputText('') });
    return [item, text];
  };

  const close = (item: StreamedItem, status: ItemStatus): string => {
    if (item.status !== 'in_progress') return '';
    item.status = status;
    const at = { item_id: item.id, output_index: item.index };
    let text = '';
    if (item.kind === 'reasoning') {
      text +=
        emit('response.reasoning_text.done', { ...at, content_index: 0, text: item.text }) +
        emit('response.content_part.done', { ...at, content_index: 0, part: { type: 'reasoning_text', text: item.text } });
    } else if (item.kind === 'message') {
      text +=
        emit('response.output_text.done', { ...at, content_index: 0, text: item.text, logprobs: [] }) +
        emit('response.content_part.done', { ...at, content_index: 0, part: outputText(item.text, item.annotations) });
    } else {
      const name = names.get(item.call.name)?.name ?? item.call.name;
      text += emit('response.function_call_arguments.done', { ...at, name, arguments: item.call.arguments });
    }
    return text + emit('response.output_item.done', { output_index: item.index, item: itemObject(item, status) });
  };

  /** The open reasoning or message item, of `kind`: the current one, or a new one after closing it. */
  const currentOf = (kind: 'reasoning' | 'message'): [StreamedItem, string] => {
    if (current?.kind === kind) return [current, ''];
    const closing = current ? close(current, 'completed') : '';
    const [item, text] = open(kind);
    current = item;
    return [item, closing + text];
  };

  const closeAll = (status: ItemStatus) => {
    const text = items.map((item) => close(item, item.kind === 'message' ? status : 'completed')).join('');
    current = null;
    return text;
  };

  /** One of the host's own events, under the slug; its sequence number followed by any event added here. */
  const passed = (event: { event?: string; data: Record<string, unknown> }) => {
    const { data } = event;
    if (typeof data.sequence_number === 'number') sequence = data.sequence_number + 1;
    const response = data.response;
    const named =
      typeof response === 'object' && response !== null
        ? { ...data, response: passedResponse(response as Record<string, unknown>, result, { billed }) }
        : data;
    return sseData(named, event.event);
  };

  return {
    open: () => (passingThrough ? '' : preamble()),
    event(event: PipelineEvent) {
      if (event.type === 'pass_through') {
        passingThrough = true;
        const type = event.data.type;
        if (type === 'response.completed' || type === 'response.incomplete') {
          hostEnd = event;
          return '';
        }
        return passed(event);
      }
      if (passingThrough && event.type !== 'usage' && event.type !== 'billed') return '';
      switch (event.type) {
        case 'reasoning': {
          if (event.text === '') return '';
          const head = preamble();
          const [item, opening] = currentOf('reasoning');
          item.text += event.text;
          const at = { item_id: item.id, output_index: item.index, content_index: 0 };
          return head + opening + emit('response.reasoning_text.delta', { ...at, delta: event.text });
        }
        case 'text': {
          if (event.text === '') return '';
          const head = preamble();
          const [item, opening] = currentOf('message');
          item.text += event.text;
          textLength += event.text.length;
          const at = { item_id: item.id, output_index: item.index, content_index: 0 };
          return head + opening + emit('response.output_text.delta', { ...at, delta: event.text, logprobs: [] });
        }
        case 'citation': {
          // Annotates the open message its passage is in; a message already closed has said its annotations.
          const item = current?.kind === 'message' && current.textStart <= event.start ? current : null;
          if (!item) return '';
          const annotation = urlCitation(event, item.textStart);
          item.annotations.push(annotation);
          const at = { item_id: item.id, output_index: item.index, content_index: 0 };
          return emit('response.output_text.annotation.added', {
            ...at,
            annotation_index: item.annotations.length - 1,
            annotation,
          });
        }
        case 'tool_call': {
          const head = preamble();
          let item = calls.get(event.index);
          let opening = '';
          if (!item) {
            opening = current ? close(current, 'completed') : '';
            current = null;
            const [opened, text] = open('function_call', { id: event.id ?? '', name: event.name ?? '', arguments: '' });
            calls.set(event.index, opened);
            item = opened;
            opening += text;
          }
          if (event.argumentsDelta === '') return head + opening;
          item.call.arguments += event.argumentsDelta;
          return (
            head +
            opening +
            emit('response.function_call_arguments.delta', {
              item_id: item.id,
              output_index: item.index,
              delta: event.argumentsDelta,
            })
          );
        }
        case 'finish':
          finish = event.reason;
          return closeAll(INCOMPLETE[event.reason] ? 'incomplete' : 'completed');
        case 'usage':
          usage = event.usage;
          return '';
        case 'billed':
          billed = event;
          return '';
        default:
          // `ready` opens the stream's headers only.
          return '';
      }
    },
    close() {
      // The closing event (the host's, or ours) carries the settlement's `ledger_position` beside its `response`.
      const position = billed ? { ledger_position: billed.position } : {};
      if (passingThrough) return hostEnd ? passed({ ...hostEnd, data: { ...hostEnd.data, ...position } }) : '';
      const incomplete = finish !== undefined && INCOMPLETE[finish] !== undefined;
      const head = preamble();
      const closing = closeAll(incomplete ? 'incomplete' : 'completed');
      const status = incomplete ? 'incomplete' : 'completed';
      // A reply with nothing in it still has its (empty) message, as a whole reply does.
      let empty = '';
      if (items.length === 0) {
        const [item, text] = open('message');
        empty = text + close(item, incomplete ? 'incomplete' : 'completed');
      }
      const response = snapshot(status, { usage: usageOf({ billed, usage }), finish });
      return head + closing + empty + emit(`response.${status}`, { response, ...position });
    },
    error(error: ApiError) {
      if (passingThrough) return emit('error', { code: error.code, message: error.message, param: null });
      const head = preamble();
      const response = snapshot('failed', {
        usage: usage ? usageOf({ billed: null, usage }) : null,
        error: { code: 'server_error', message: error.message },
      });
      return (
        head + emit('error', { code: error.code, message: error.message, param: null }) + emit('response.failed', { response })
      );
    },
  };
}
