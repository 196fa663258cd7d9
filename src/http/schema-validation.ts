import type { PipeTransform } from '@nestjs/common';
import Ajv, { ErrorObject } from 'ajv';
import { maskSecrets } from '../key-secret/key-secret';
import { ApiError } from './api-error';

/**
 * Request bodies of the API surfaces, checked against JSON Schemas compiled once into plain
 * functions: on the hot path they cost a fraction of decorator-driven validation and allocate
 * next to nothing. `x-message` on a schema says what is expected (after the field's path), for unions whose own errors
 * would say little.
 */
const ajv = new Ajv({ allErrors: false, verbose: true, strict: true, allowUnionTypes: true });
ajv.addKeyword('x-message');

/** `messages.0.content` from `/messages/0/content`. */
const pathOf = (error: ErrorObject): string => error.instancePath.slice(1).replace(/\//g, '.');

/** The field at fault, as `input[0].content`: the path, with the name of a property missing or not allowed added. */
function paramOf(error: ErrorObject): string | null {
  const named =
    error.keyword === 'required'
      ? `/${(error.params as { missingProperty: string }).missingProperty}`
      : error.keyword === 'additionalProperties'
        ? `/${(error.params as { additionalProperty: string }).additionalProperty}`
        : '';
  const path = (error.instancePath + named)
    .slice(1)
    .replace(/\/(\d+)(?=\/|$)/g, '[$1]')
    .replace(/\//g, '.');
  // The path holds the client's field names: masked like the message that names it.
  return path === '' ? null : maskSecrets(path);
}

/** Failures whose own message says more than what the schema expects as a whole. */
const NAMED_BY_THEMSELVES = new Set(['additionalProperties', 'required', 'type']);

function describe(error: ErrorObject): string {
  const own = (error.parentSchema as { 'x-message'?: string } | undefined)?.['x-message'];
  const at = pathOf(error);
  // A field missing or not allowed is named, whatever the schema says it expects as a whole.
  if (own && !NAMED_BY_THEMSELVES.has(error.keyword)) return `${at || 'the body'} ${own}`;
  if (error.keyword === 'type') {
    const types = String((error.params as { type: string | string[] }).type)
      .split(',')
      .filter((t) => t !== 'null');
    return `${at || 'the body'} must be ${types.map((t) => (t === 'object' ? 'a JSON object' : `a${/^[aeiou]/.test(t) ? 'n' : ''} ${t}`)).join(' or ')}`;
  }
  if (error.keyword === 'required') {
    const missing = (error.params as { missingProperty: string }).missingProperty;
    return `${at ? `${at}.` : ''}${missing} is required`;
  }
  if (error.keyword === 'additionalProperties') {
    const extra = (error.params as { additionalProperty: string }).additionalProperty;
    return `${at ? `${at}.` : ''}${extra} is not allowed`;
  }
  const bound = (error.params as { limit?: number }).limit;
  const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? '' : 's'}`;
  if (error.keyword === 'minLength')
    return `${at || 'the body'} ${bound === 1 ? 'must not be empty' : `must be at least ${plural(bound!, 'character')} long`}`;
  if (error.keyword === 'maxLength') return `${at || 'the body'} must be at most ${plural(bound!, 'character')} long`;
  if (error.keyword === 'minItems') return `${at || 'the body'} must hold at least ${plural(bound!, 'item')}`;
  if (error.keyword === 'maxItems') return `${at || 'the body'} must hold at most ${plural(bound!, 'item')}`;
  const allowed =
    error.keyword === 'enum'
      ? `: ${(error.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`
      : '';
  return `${at || 'the body'} ${error.message ?? 'is invalid'}${allowed}`;
}

/** A pipe that lets a body through unchanged when it matches `schema`, and answers 400 naming the field when not. */
export function schemaValidation<T>(schema: object): PipeTransform<unknown, T> {
  const validate = ajv.compile(schema);
  return {
    transform(value: unknown): T {
      if (validate(value)) return value as T;
      // Without allErrors the failing keyword comes last (after the branches of a union it tried).
      const errors = validate.errors ?? [];
      // A field not allowed is named, even inside a union that failed as a whole (a misspelt setting).
      const last = errors.find((e) => e.keyword === 'additionalProperties') ?? errors[errors.length - 1];
      // `param`: the field at fault, for formats whose error body names it.
      throw new ApiError('invalid_request', last ? describe(last) : 'invalid request body', {
        param: last ? paramOf(last) : null,
      });
    },
  };
}

/** Schema helpers. Optional scalars may also be null, as some clients send them. */
export const integerFrom = (minimum: number) => ({ type: ['integer', 'null'], minimum });
export const numberBetween = (minimum: number, maximum: number) => ({ type: ['number', 'null'], minimum, maximum });
export const optionalBoolean = { type: ['boolean', 'null'] };
export const nonEmptyString = { type: 'string', minLength: 1 };
/** A catalogue slug or UUID; the bound keeps a pasted document out of errors and the request log. */
export const modelReference = { type: 'string', minLength: 1, maxLength: 256 };
export const object = { type: 'object' };
