import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import { ROOT } from './processes';

/**
 * The published API documents the wire is held to, as extracted into test/fixtures/published (see
 * its README), read as JSON Schema 2020-12 and validated with ajv.
 */

export type PublishedDocument = 'openai' | 'openrouter' | 'anthropic-sdk';

/**
 * A difference from a published document that is known and kept, with why: the fields a published
 * schema (at `at`, a JSON pointer into the extract) requires that a route does not send.
 */
export interface Deviation {
  document: PublishedDocument;
  at: string;
  omits: string[];
  why: string;
}

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * OpenAPI's dialect as plain JSON Schema 2020-12 (a pure rewrite, returning a new value):
 * - `nullable: true` (OpenAPI 3.0, which OpenAI's 3.1 document still uses) is "this, or null",
 *   whatever else the schema says (an `enum` without null, a `$ref` beside it);
 * - `$recursiveRef: "#"` (draft 2019-09) in a component schema marked `$recursiveAnchor` refers
 *   to that component itself.
 * Keywords JSON Schema does not know (`discriminator`, OpenAPI's formats) are left for ajv to pass over.
 */
export function asJsonSchema(value: Json, component?: string): Json {
  if (Array.isArray(value)) return value.map((v) => asJsonSchema(v, component));
  if (!isObject(value)) return value;
  const { nullable, $recursiveAnchor: _anchor, ...rest } = value;
  const rewritten: JsonObject = {};
  for (const [key, v] of Object.entries(rest)) {
    if (key === '$recursiveRef' && v === '#' && component) rewritten.$ref = `#/components/schemas/${component}`;
    else if (key === 'properties' && isObject(v))
      rewritten[key] = Object.fromEntries(Object.entries(v).map(([name, s]) => [name, asJsonSchema(s, component)]));
    else rewritten[key] = asJsonSchema(v, component);
  }
  return nullable === true ? { anyOf: [rewritten, { type: 'null' }] } : rewritten;
}

/** `document` with the fields each deviation names taken out of the `required` list it points at. */
export function withDeviations(document: JsonObject, deviations: Deviation[]): JsonObject {
  const copy = structuredClone(document);
  for (const { at, omits } of deviations) {
    const schema = at
      .split('/')
      .slice(1)
      .reduce<Json | undefined>((node, part) => (isObject(node) ? node[part.replace(/~1/g, '/')] : undefined), copy);
    if (!isObject(schema) || !Array.isArray(schema.required))
      throw new Error(`no required fields at ${at}: the deviation points nowhere`);
    const required = schema.required as string[];
    for (const field of omits) {
      // A deviation for a field the schema does not require is stale: say so rather than carry it.
      if (!required.includes(field)) throw new Error(`${at} does not require ${field}: drop it from the deviation`);
    }
    schema.required = required.filter((field) => !omits.includes(field));
  }
  return copy;
}

const FIXTURES = join(ROOT, 'test/fixtures/published');

/** `$ref`s within the document made absolute (`openai#/components/…`), so that any of its schemas compiles alone. */
function absoluteRefs(value: Json, document: PublishedDocument): Json {
  if (Array.isArray(value)) return value.map((v) => absoluteRefs(v, document));
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, v]) => [
      key,
      key === '$ref' && typeof v === 'string' && v.startsWith('#') ? `${document}${v}` : absoluteRefs(v, document),
    ]),
  );
}

/** The extract of `document`, its component schemas read as JSON Schema. */
export function loadPublished(document: PublishedDocument): JsonObject {
  const extract = JSON.parse(readFileSync(join(FIXTURES, `${document}.json`), 'utf8')) as JsonObject;
  const schemas = (extract.components as JsonObject).schemas as JsonObject;
  return {
    ...extract,
    components: {
      schemas: Object.fromEntries(
        Object.entries(schemas).map(([name, s]) => [name, absoluteRefs(asJsonSchema(s, name), document)]),
      ),
    },
  };
}

const typeOf = (value: unknown): string =>
  value === null ? 'null' : Array.isArray(value) ? 'array' : Number.isInteger(value) ? 'integer' : typeof value;

/** Whether a schema's `type` (if it says one) admits a value of JSON type `type`. */
const admits = (schema: JsonObject, type: string): boolean => {
  const types = schema.type === undefined ? null : [schema.type].flat();
  return types === null || types.includes(type) || (type === 'integer' && types.includes('number'));
};

/** Validates values against the published documents' schemas, the deviations applied. */
export class PublishedSchemas {
  private readonly ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true, logger: false });
  private readonly documents = new Map<string, JsonObject>();

  constructor(deviations: Deviation[]) {
    for (const document of ['openai', 'openrouter', 'anthropic-sdk'] as const) {
      const loaded = withDeviations(
        loadPublished(document),
        deviations.filter((d) => d.document === document),
      );
      this.documents.set(document, loaded);
      this.ajv.addSchema(loaded, document);
    }
  }

  /** What is wrong with `value` as the component schema `name` of `document` (nothing: it conforms). */
  problems(document: PublishedDocument, name: string, value: unknown): string[] {
    return this.explain(this.resolve({ $ref: `${document}#/components/schemas/${name}` }), value, '');
  }

  /** The schema a reference names (the schema itself when it is none). */
  private resolve(schema: Json): JsonObject {
    let s = schema;
    while (isObject(s) && typeof s.$ref === 'string' && Object.keys(s).length === 1) {
      const [document, pointer] = s.$ref.split('#');
      const schemas = (this.documents.get(document)?.components as JsonObject | undefined)?.schemas;
      s = isObject(schemas) ? (schemas[pointer.split('/').pop() ?? ''] ?? null) : null;
    }
    if (!isObject(s)) throw new Error(`no schema at ${JSON.stringify(schema)}`);
    return s;
  }

  /**
   * The failures that say what is wrong, innermost first: in a union, those of the branches the
   * value's `type` (else its JSON type) picks, not every branch's; in an object, each property's
   * own. Never none for a value that fails: ajv's own list when nothing narrower is found.
   */
  private explain(schema: JsonObject, value: unknown, at: string): string[] {
    // Compiled once per schema object (ajv keeps them by identity).
    const validate: ValidateFunction = this.ajv.compile(schema);
    if (validate(value)) return [];
    const all = (validate.errors ?? []).map(
      (e) => `${at}${e.instancePath || (at ? '' : '/')} ${e.message ?? ''} ${JSON.stringify(e.params)}`,
    );
    const narrower = this.narrower(schema, value, at);
    return narrower.length > 0 ? narrower : all;
  }

  private narrower(s: JsonObject, value: Json, at: string): string[] {
    const union = s.anyOf ?? s.oneOf;
    if (Array.isArray(union)) {
      const branches = union.map((b) => this.resolve(b));
      const tag = isObject(value) ? value.type : undefined;
      const tagged = branches.filter((b) => {
        const t = isObject(b.properties) ? b.properties.type : undefined;
        return isObject(t) && tag !== undefined && (t.const === tag || (Array.isArray(t.enum) && t.enum.includes(tag)));
      });
      const typed = branches.filter((b) => admits(b, typeOf(value)));
      const candidates = tagged.length > 0 ? tagged : typed.length > 0 ? typed : branches;
      return candidates.map((b) => this.explain(b, value, at)).reduce((fewest, e) => (e.length < fewest.length ? e : fewest));
    }
    const found: string[] = [];
    if (Array.isArray(s.allOf)) for (const part of s.allOf) found.push(...this.explain(this.resolve(part), value, at));
    if (isObject(s.properties) && isObject(value))
      for (const [name, property] of Object.entries(s.properties))
        if (name in value) found.push(...this.explain(this.resolve(property), value[name], `${at}/${name}`));
    if (isObject(s.items) && Array.isArray(value)) {
      const items = this.resolve(s.items);
      value.forEach((item, i) => found.push(...this.explain(items, item, `${at}/${i}`)));
    }
    // This level's own failures: a required field missing, a wrong type, a value not allowed.
    const validate = this.ajv.compile(s);
    validate(value);
    const own = (validate.errors ?? []).filter(
      (e) => e.instancePath === '' && !['properties', 'items', 'allOf', 'anyOf', 'oneOf', '$ref'].includes(e.keyword),
    );
    return [...found, ...own.map((e) => `${at || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`)];
  }
}
