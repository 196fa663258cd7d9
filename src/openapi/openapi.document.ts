import { chatCompletionRequestSchema } from '../surfaces/chat-completions/chat-completions.schema';
import { embeddingsRequestSchema } from '../surfaces/embeddings/embeddings.schema';
import { countTokensRequestSchema, messagesRequestSchema } from '../surfaces/messages/messages.schema';
import {
  countTokensRequestSchema as geminiCountTokensRequestSchema,
  generateContentRequestSchema,
} from '../surfaces/gemini/gemini.schema';
import { nativeChatRequestSchema } from '../surfaces/native/native.schema';
import { alertsSchema } from '../alerts/alerts.schema';
import { createKeySchema, updateKeySchema } from '../keys/management.schema';
import { creditNoteSchema } from '../credit-notes/credit-notes.schema';
import { responsesRequestSchema } from '../surfaces/responses/responses.schema';
import { REPLY_SCHEMAS } from './reply-schemas';

/**
 * The OpenAPI 3.1 document of the public routes, built from the very schemas the routes validate
 * request bodies with (imported, never copied: the document cannot drift from the validation)
 * and the reply schemas beside it. Streams are `text/event-stream`; each message's `data` is
 * described by the schema `x-event-data` names.
 */

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: object) => ({ 'application/json': { schema } });

/** Errors of a route, in its surface's format, by status. */
function errors(format: string, statuses: number[]): Record<string, object> {
  const described: Record<number, string> = {
    400: 'invalid request (the message names the field)',
    401: 'missing or invalid API key',
    403: 'a key of the wrong kind (a management key calling a model, or an ordinary key the management API)',
    402: 'insufficient credits',
    404: 'unknown model or route',
    408: 'the request was not received in time',
    413: 'body too large',
    429: 'rate limit reached (Retry-After says when to try again)',
    502: 'the host failed',
    503: 'the gateway cannot serve now (nothing was billed); while it shuts down, with Retry-After',
    504: 'the host did not answer in time',
  };
  return Object.fromEntries(statuses.map((s) => [String(s), { description: described[s], content: json(ref(format)) }]));
}

const INFERENCE_ERRORS = [400, 401, 402, 404, 413, 429, 502, 503, 504];

const LEDGER_POSITION_OF_REPLY = {
  schema: { type: 'string' },
  description:
    "the ledger position of the reply's settlement (a stream's: of its reservation; its settlement's is in its last event's `ledger_position`, `ledgerPosition` on Gemini's)",
};

/** The read routes' `min_position`, and the header naming what they reflect. */
const MIN_POSITION = {
  name: 'min_position',
  in: 'query',
  required: false,
  schema: { type: 'string', pattern: '^[0-9]+$' },
  description:
    "answer only once the read models include this ledger position (a reply's x-ledger-position): waits up to MIN_POSITION_WAIT_MS, then 503",
};
const reflected = (description: string, content: object) => ({
  description,
  headers: {
    'x-ledger-position': { schema: { type: 'string' }, description: 'the ledger position the answer reflects, at least' },
  },
  content,
});

/** A billed route: its body, its whole reply, its stream, its errors. */
function inference(summary: string, body: string, reply: string, event: string | null, format: string) {
  return {
    post: {
      summary,
      requestBody: { required: true, content: json(ref(body)) },
      responses: {
        '200': {
          description: event ? 'the reply, whole, or as server-sent events when the request asks for a stream' : 'the reply',
          headers: {
            'x-request-id': { schema: { type: 'string' }, description: "the request's id (the client's own, if well-formed)" },
            'x-ledger-position': LEDGER_POSITION_OF_REPLY,
          },
          content: {
            ...json(ref(reply)),
            ...(event ? { 'text/event-stream': { schema: { type: 'string' }, 'x-event-data': ref(event) } } : {}),
          },
        },
        ...errors(format, INFERENCE_ERRORS),
      },
    },
  };
}

const bearer = [{ bearer: [] }];

/** The model routes answer Anthropic's SDKs, which send `anthropic-version`, in the Models API's shapes. */
const ANTHROPIC_VERSION = {
  name: 'anthropic-version',
  in: 'header',
  schema: { type: 'string' },
  description: "sent (as Anthropic's SDKs send it): Anthropic's Models API shapes, and errors in the messages format",
};
const ANTHROPIC_SHAPES =
  "OpenAI's and OpenRouter's shapes; with `anthropic-version`, Anthropic's Models API's (its chat models, newest first, in pages of `limit`), errors as MessagesError.";
const messagesAuth = [{ apiKey: [] }, { bearer: [] }];
const geminiAuth = [{ googApiKey: [] }, { googKey: [] }, { bearer: [] }];

const geminiModelParameter = {
  name: 'model',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description:
    'a catalogue slug (its slash as is, or encoded), its UUID, or the part of a slug after its slash when no other slug has the same; `models/` before it is allowed',
};

/** A Gemini route on a model: the API's own verbs after a colon. */
function geminiCall(summary: string, stream: boolean) {
  const { post } = inference(summary, 'GenerateContentRequest', 'GenerateContentResponse', null, 'GeminiError');
  const content = stream
    ? { 'text/event-stream': { schema: { type: 'string' }, 'x-event-data': ref('GenerateContentResponse') } }
    : post.responses['200'].content;
  return {
    post: {
      ...post,
      security: geminiAuth,
      parameters: [
        geminiModelParameter,
        ...(stream ? [{ name: 'alt', in: 'query', required: true, schema: { const: 'sse' } }] : []),
      ],
      responses: {
        ...post.responses,
        '200': {
          ...post.responses['200'],
          description: stream ? 'the reply as `data:` chunks, the finish reason and usage on the last' : 'the reply',
          content,
        },
      },
    },
  };
}

export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Model Gateway',
      version: '1',
      description:
        'One HTTP API for many language models, billed from one prepaid credit balance. Dashboard routes (/dashboard/...) are the web app’s own and not listed.',
    },
    servers: [{ url: '/' }],
    security: bearer,
    paths: {
      '/api/v1/chat/completions': inference(
        'Chat completions',
        'ChatCompletionRequest',
        'ChatCompletion',
        'ChatCompletionChunk',
        'ChatError',
      ),
      '/api/v1/messages': {
        post: {
          ...inference('Messages', 'MessagesRequest', 'Message', 'MessagesStreamEvent', 'MessagesError').post,
          security: messagesAuth,
          parameters: [{ name: 'anthropic-version', in: 'header', required: false, schema: { type: 'string' } }],
        },
      },
      '/api/v1/messages/count_tokens': {
        post: {
          summary: 'Count the input tokens of a messages body (never billed)',
          security: messagesAuth,
          requestBody: { required: true, content: json(ref('CountTokensRequest')) },
          responses: {
            '200': { description: 'the count', content: json(ref('CountTokens')) },
            ...errors('MessagesError', [400, 401, 404]),
          },
        },
      },
      '/api/v1/responses': inference(
        'Responses (stateless)',
        'ResponsesRequest',
        'Response',
        'ResponsesStreamEvent',
        'ResponsesError',
      ),
      '/api/v1beta/models/{model}:generateContent': geminiCall('Gemini API: generate content', false),
      '/api/v1beta/models/{model}:streamGenerateContent': geminiCall('Gemini API: generate content as server-sent events', true),
      '/api/v1beta/models/{model}:countTokens': {
        post: {
          summary: 'Gemini API: count the input tokens of contents (estimated; never billed)',
          security: geminiAuth,
          parameters: [geminiModelParameter],
          requestBody: { required: true, content: json(ref('GeminiCountTokensRequest')) },
          responses: {
            '200': { description: 'the count', content: json(ref('GeminiCountTokens')) },
            ...errors('GeminiError', [400, 401, 404]),
          },
        },
      },
      '/api/v1beta/models': {
        get: {
          summary: 'Gemini API: the chat models some configured host can serve, as Gemini models',
          security: geminiAuth,
          responses: {
            '200': { description: 'the list, in one page', content: json(ref('GeminiModelList')) },
            ...errors('GeminiError', [401]),
          },
        },
      },
      '/api/v1beta/models/{model}': {
        get: {
          summary: 'Gemini API: one model',
          security: geminiAuth,
          parameters: [geminiModelParameter],
          responses: {
            '200': { description: 'the model', content: json(ref('GeminiModel')) },
            ...errors('GeminiError', [401, 404]),
          },
        },
      },
      '/api/v1/embeddings': inference('Embeddings', 'EmbeddingsRequest', 'Embeddings', null, 'ChatError'),
      '/api/v1/models/{model}/chat': {
        parameters: [
          { name: 'model', in: 'path', required: true, schema: { type: 'string' }, description: 'a catalogue slug or UUID' },
        ],
        ...inference('The native route', 'NativeChatRequest', 'NativeReply', 'NativeStreamEvent', 'NativeError'),
      },
      '/api/v1/models': {
        get: {
          summary: 'The models some configured host can serve',
          description: ANTHROPIC_SHAPES,
          security: messagesAuth,
          parameters: [
            ANTHROPIC_VERSION,
            {
              name: 'limit',
              in: 'query',
              schema: { type: 'integer', minimum: 1, maximum: 1000, default: 20 },
              description: 'with anthropic-version: models a page',
            },
            {
              name: 'after_id',
              in: 'query',
              schema: { type: 'string' },
              description: 'with anthropic-version: the page after this model',
            },
            {
              name: 'before_id',
              in: 'query',
              schema: { type: 'string' },
              description: 'with anthropic-version: the page before this model',
            },
          ],
          responses: {
            '200': { description: 'the list', content: json({ oneOf: [ref('ModelList'), ref('AnthropicModelList')] }) },
            ...errors('ChatError', [400, 401]),
          },
        },
      },
      '/api/v1/models/{model}': {
        get: {
          summary: 'One model, by slug or UUID',
          description: ANTHROPIC_SHAPES,
          security: messagesAuth,
          parameters: [{ name: 'model', in: 'path', required: true, schema: { type: 'string' } }, ANTHROPIC_VERSION],
          responses: {
            '200': { description: 'the model', content: json({ oneOf: [ref('Model'), ref('AnthropicModel')] }) },
            ...errors('ChatError', [401, 404]),
          },
        },
      },
      '/api/v1/credits': {
        get: {
          summary: "The organization's credits",
          description:
            "OpenRouter's fields in decimal credits (JSON numbers, for display), and beside each its exact figure in nano-credits (`total_credits_nano`, `total_usage_nano`, `reserved_nano`, `available_nano`: an integer, or past 2^53 its decimal digits as a string), the figures to reconcile with statements and ledger exports.",
          parameters: [MIN_POSITION],
          responses: {
            '200': reflected('in credits, and exactly in nano-credits', json(ref('Credits'))),
            ...errors('OpenRouterError', [400, 401, 503]),
          },
        },
      },
      '/api/v1/key': {
        get: {
          summary: 'The calling key: its spend, credit limit, rate limits and expiry',
          parameters: [MIN_POSITION],
          responses: {
            '200': reflected('the key', json(ref('KeyInfo'))),
            ...errors('OpenRouterError', [400, 401, 503]),
          },
        },
      },
      '/api/v1/generation': {
        get: {
          summary: "One request of the caller's organization, by its x-request-id",
          parameters: [{ name: 'id', in: 'query', required: true, schema: { type: 'string' } }, MIN_POSITION],
          responses: {
            '200': reflected('the request', json(ref('Generation'))),
            ...errors('OpenRouterError', [400, 401, 404, 503]),
          },
        },
      },
      '/api/v1/usage/focus': {
        get: {
          summary:
            "The organization's charges and credit notes as CSV in the FinOps FOCUS columns (management key): a row per request, or per day × model × key",
          parameters: [
            { name: 'group', in: 'query', required: false, schema: { enum: ['request', 'day'] } },
            { name: 'from', in: 'query', required: false, schema: { type: 'string', format: 'date' } },
            { name: 'to', in: 'query', required: false, schema: { type: 'string', format: 'date' } },
          ],
          responses: {
            '200': reflected('the CSV (RFC 4180), read from the ledger up to the position named', {
              'text/csv': { schema: { type: 'string' } },
            }),
            ...errors('ChatError', [400, 401, 403]),
          },
        },
      },
      '/api/v1/keys': {
        get: {
          summary: "The organization's ordinary keys (management key)",
          responses: {
            '200': { description: 'the keys, oldest first', content: json(ref('ManagedKeyList')) },
            ...errors('ChatError', [401, 403]),
          },
        },
        post: {
          summary: 'Create a key (management key); its secret is in this answer only',
          requestBody: { required: true, content: json(ref('CreateKeyRequest')) },
          responses: {
            '201': { description: 'the key and its secret', content: json(ref('ManagedKeyCreated')) },
            ...errors('ChatError', [400, 401, 403]),
          },
        },
      },
      '/api/v1/credit-notes': {
        post: {
          summary:
            "Refund a generation (whole or part) or adjust the balance, once per idempotency key (a management key the gateway's operator gave billing rights: keys create --management --billing)",
          parameters: [{ name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string' } }],
          requestBody: { required: true, content: json(ref('CreditNoteRequest')) },
          responses: {
            '201': { description: 'the credit note issued', content: json(ref('CreditNote')) },
            '200': { description: 'the note its idempotency key had issued before', content: json(ref('CreditNote')) },
            ...errors('ChatError', [400, 401, 402, 403, 404]),
            '403': {
              description:
                'not a management key the operator gave billing rights (rights given in the dashboard count for nothing)',
              content: json(ref('ChatError')),
            },
            '409': {
              description: 'the idempotency key issued another note',
              content: json(ref('ChatError')),
            },
          },
        },
      },
      '/api/v1/keys/{id}': {
        parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
        get: {
          summary: 'One key (management key)',
          responses: {
            '200': { description: 'the key', content: json(ref('ManagedKey')) },
            ...errors('ChatError', [401, 403, 404]),
          },
        },
        patch: {
          summary: "Change a key's name, credit limit, rate limits, expiry, or disable it (management key)",
          requestBody: { required: true, content: json(ref('UpdateKeyRequest')) },
          responses: {
            '200': { description: 'the key as changed', content: json(ref('ManagedKey')) },
            ...errors('ChatError', [400, 401, 403, 404]),
          },
        },
        delete: {
          summary: 'Revoke a key (management key)',
          responses: {
            '200': { description: 'the key, revoked', content: json(ref('ManagedKey')) },
            ...errors('ChatError', [401, 403, 404]),
          },
        },
      },
      '/api/v1/alerts': {
        get: {
          summary: "The organization's alerts webhook and thresholds, never its secret (management key)",
          responses: {
            '200': { description: 'the alerts', content: json(ref('Alerts')) },
            ...errors('ChatError', [401, 403, 404]),
          },
        },
        put: {
          summary: 'Set every alert at once (management key); the first time, the signing secret is in this answer only',
          requestBody: { required: true, content: json(ref('AlertsRequest')) },
          responses: {
            '200': { description: 'the alerts, and a new secret when one was issued', content: json(ref('AlertsSet')) },
            ...errors('ChatError', [400, 401, 403]),
          },
        },
        delete: {
          summary: 'Turn alerts off (management key)',
          responses: { '204': { description: 'off' }, ...errors('ChatError', [401, 403, 404]) },
        },
      },
      '/api/v1/alerts/secret': {
        post: {
          summary: 'A new signing secret, in this answer only (management key)',
          responses: {
            '200': { description: 'the secret', content: json(ref('AlertsSecret')) },
            ...errors('ChatError', [401, 403, 404]),
          },
        },
      },
      '/api/v1/alerts/test': {
        post: {
          summary: 'Send a test alert, delivered like the others (management key)',
          responses: {
            '202': { description: "the alert's id (its webhook-id)", content: json(ref('AlertTest')) },
            // 429: one test alert per ALERT_TEST_INTERVAL_MS (10 s) for an organization.
            ...errors('ChatError', [401, 403, 404, 429]),
          },
        },
      },
      '/api/v1/openapi.json': {
        get: {
          summary: 'This document',
          security: [],
          responses: { '200': { description: 'OpenAPI 3.1', content: json({ type: 'object' }) } },
        },
      },
      '/health/live': {
        get: {
          summary: 'The process serves',
          security: [],
          responses: { '200': { description: 'live', content: json({ type: 'object' }) } },
        },
      },
      '/health/ready': {
        get: {
          summary: 'Ready to serve, or why not',
          security: [],
          responses: {
            '200': { description: 'ready', content: json(ref('Readiness')) },
            '503': { description: 'not ready, with the reasons', content: json(ref('Readiness')) },
          },
        },
      },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics (unless METRICS=off or METRICS_PORT moves them)',
          security: [],
          responses: {
            '200': { description: "Prometheus's text format", content: { 'text/plain': { schema: { type: 'string' } } } },
          },
        },
      },
    },
    components: {
      securitySchemes: {
        bearer: { type: 'http', scheme: 'bearer', description: 'Authorization: Bearer sk-svc-…' },
        apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key' },
        googApiKey: { type: 'apiKey', in: 'header', name: 'x-goog-api-key' },
        googKey: { type: 'apiKey', in: 'query', name: 'key' },
      },
      schemas: {
        ChatCompletionRequest: chatCompletionRequestSchema,
        MessagesRequest: messagesRequestSchema,
        CountTokensRequest: countTokensRequestSchema,
        ResponsesRequest: responsesRequestSchema,
        EmbeddingsRequest: embeddingsRequestSchema,
        NativeChatRequest: nativeChatRequestSchema,
        GenerateContentRequest: generateContentRequestSchema,
        GeminiCountTokensRequest: geminiCountTokensRequestSchema,
        CreateKeyRequest: createKeySchema,
        CreditNoteRequest: creditNoteSchema,
        UpdateKeyRequest: updateKeySchema,
        AlertsRequest: alertsSchema,
        ...REPLY_SCHEMAS,
      },
    },
  };
}
