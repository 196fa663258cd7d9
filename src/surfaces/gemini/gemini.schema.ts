import { integerFrom, nonEmptyString, numberBetween, object, optionalBoolean } from '../../http/schema-validation';

/** The Gemini API's `Part`: one of its data fields, and the thought markers beside it. */
export interface Part {
  text?: string;
  /** A piece of the model's reasoning (a summary of it, as the API shows thoughts). */
  thought?: boolean;
  /** The host's signature of the reasoning that led to this part (base64 text). */
  thoughtSignature?: string;
  inlineData?: { mimeType: string; data: string };
  fileData?: { mimeType?: string; fileUri: string };
  functionCall?: { id?: string; name: string; args?: Record<string, unknown> };
  functionResponse?: { id?: string; name: string; response: Record<string, unknown>; parts?: unknown[] };
  executableCode?: unknown;
  codeExecutionResult?: unknown;
  videoMetadata?: unknown;
}

export interface Content {
  role?: string;
  parts: Part[];
}

export interface FunctionDeclaration {
  name: string;
  description?: string;
  /** An OpenAPI-style schema (`"type": "OBJECT"`), as the API's `Schema`. */
  parameters?: Record<string, unknown>;
  /** A JSON Schema, taken as is. */
  parametersJsonSchema?: Record<string, unknown>;
}

/** A tool entry: functions, or one of the tools the API runs itself (each a key of its own). */
export type Tool = { functionDeclarations?: FunctionDeclaration[] } & Record<string, unknown>;

export interface GenerationConfig {
  maxOutputTokens?: number;
  temperature?: number;
  topP?: number;
  topK?: number;
  stopSequences?: string[];
  candidateCount?: number;
  responseMimeType?: string;
  responseSchema?: unknown;
  responseJsonSchema?: unknown;
  responseModalities?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  responseLogprobs?: boolean;
  logprobs?: number;
  thinkingConfig?: { thinkingBudget?: number; includeThoughts?: boolean; thinkingLevel?: string };
  [uncarried: string]: unknown;
}

/** POST …/models/{model}:generateContent and :streamGenerateContent (the model is in the path). */
export interface GenerateContentRequest {
  contents: Content[];
  systemInstruction?: Content | string;
  tools?: Tool[];
  toolConfig?: {
    functionCallingConfig?: { mode?: string; allowedFunctionNames?: string[] };
    /** Left out: the gateway asks for it itself on the calls that need it (Google Search beside functions on Gemini 3). */
    includeServerSideToolInvocations?: boolean;
  };
  generationConfig?: GenerationConfig;
  safetySettings?: unknown[];
  cachedContent?: string;
  /** Sent by Google's clients with the model's full name; the path's model is the one served. */
  model?: string;
}

/** POST …/models/{model}:countTokens: the contents alone, or a whole generate request. */
export interface CountTokensRequest {
  contents?: Content[];
  generateContentRequest?: GenerateContentRequest;
}

const mimeAndData = {
  type: 'object',
  required: ['mimeType', 'data'],
  additionalProperties: false,
  properties: { mimeType: nonEmptyString, data: { type: 'string' } },
};

const part = {
  type: 'object',
  additionalProperties: false,
  properties: {
    text: { type: 'string' },
    thought: optionalBoolean,
    thoughtSignature: { type: 'string' },
    inlineData: mimeAndData,
    fileData: {
      type: 'object',
      required: ['fileUri'],
      additionalProperties: false,
      properties: { mimeType: { type: 'string' }, fileUri: nonEmptyString },
    },
    functionCall: {
      type: 'object',
      required: ['name'],
      additionalProperties: false,
      properties: { id: { type: 'string' }, name: nonEmptyString, args: object },
    },
    functionResponse: {
      type: 'object',
      required: ['name', 'response'],
      properties: {
        id: { type: 'string' },
        name: nonEmptyString,
        response: object,
        parts: { type: 'array' },
      },
      additionalProperties: false,
    },
    // Named so that the refusal says what is not carried (gemini.wire.ts), rather than "not allowed".
    executableCode: object,
    codeExecutionResult: object,
    videoMetadata: object,
  },
};

const content = {
  type: 'object',
  required: ['parts'],
  additionalProperties: false,
  properties: { role: { type: 'string' }, parts: { type: 'array', items: part } },
};

const functionDeclaration = {
  type: 'object',
  required: ['name'],
  properties: {
    name: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$' },
    description: { type: 'string' },
    parameters: object,
    parametersJsonSchema: object,
    // What the function returns: no other format takes it (left out, as the README says).
    response: object,
    responseJsonSchema: object,
  },
  additionalProperties: false,
};

const generationConfig = {
  type: 'object',
  additionalProperties: false,
  properties: {
    maxOutputTokens: integerFrom(1),
    temperature: numberBetween(0, 2),
    topP: numberBetween(0, 1),
    topK: integerFrom(0),
    stopSequences: { type: 'array', maxItems: 16, items: { type: 'string' } },
    candidateCount: integerFrom(1),
    responseMimeType: { type: 'string' },
    responseSchema: object,
    responseJsonSchema: {},
    responseModalities: { type: 'array', items: { type: 'string' } },
    seed: { type: ['integer', 'null'] },
    presencePenalty: { type: ['number', 'null'] },
    frequencyPenalty: { type: ['number', 'null'] },
    responseLogprobs: optionalBoolean,
    logprobs: { type: ['integer', 'null'] },
    enableEnhancedCivicAnswers: optionalBoolean,
    mediaResolution: { type: 'string' },
    speechConfig: object,
    imageConfig: object,
    thinkingConfig: {
      type: 'object',
      additionalProperties: false,
      properties: {
        thinkingBudget: integerFrom(-1),
        includeThoughts: optionalBoolean,
        thinkingLevel: { type: 'string' },
      },
    },
  },
};

/** The tools the API runs itself, by their key in a tool entry (gemini.wire.ts says what becomes of each). */
export const GEMINI_TOOLS = [
  'googleSearch',
  'googleSearchRetrieval',
  'codeExecution',
  'urlContext',
  'fileSearch',
  'googleMaps',
  'computerUse',
] as const;

const generateContentProperties = {
  model: { type: 'string' },
  contents: { type: 'array', minItems: 1, items: content },
  systemInstruction: {
    'x-message': 'must be a Content ({"parts": [{"text": …}]}) or a string',
    anyOf: [{ type: 'string' }, content],
  },
  tools: {
    type: 'array',
    maxItems: 128,
    items: {
      type: 'object',
      additionalProperties: false,
      properties: {
        functionDeclarations: { type: 'array', maxItems: 128, items: functionDeclaration },
        ...Object.fromEntries(GEMINI_TOOLS.map((name) => [name, object])),
      },
    },
  },
  toolConfig: {
    type: 'object',
    additionalProperties: false,
    properties: {
      functionCallingConfig: {
        type: 'object',
        additionalProperties: false,
        properties: { mode: { type: 'string' }, allowedFunctionNames: { type: 'array', items: { type: 'string' } } },
      },
      retrievalConfig: object,
      includeServerSideToolInvocations: { type: 'boolean' },
    },
  },
  generationConfig,
  safetySettings: { type: 'array', items: object },
  cachedContent: { type: 'string' },
};

/** The generate request, as strict as the API itself: a field it does not know is a 400 naming it. */
export const generateContentRequestSchema = {
  type: 'object',
  required: ['contents'],
  additionalProperties: false,
  properties: generateContentProperties,
};

export const countTokensRequestSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    contents: { type: 'array', items: content },
    generateContentRequest: generateContentRequestSchema,
  },
};
