import { asJsonSchema, Json, withDeviations } from './published-schemas';

describe("reading OpenAPI's dialect as JSON Schema", () => {
  it('given `nullable`, null is allowed whatever else the schema says: an enum without it, a reference beside it', () => {
    expect(asJsonSchema({ type: 'string', enum: ['stop', 'length'], nullable: true })).toEqual({
      anyOf: [{ type: 'string', enum: ['stop', 'length'] }, { type: 'null' }],
    });
    expect(asJsonSchema({ $ref: '#/components/schemas/CompletionUsage', nullable: true })).toEqual({
      anyOf: [{ $ref: '#/components/schemas/CompletionUsage' }, { type: 'null' }],
    });
    expect(asJsonSchema({ type: 'string', nullable: false })).toEqual({ type: 'string' });
  });

  it('given `nullable` deep inside, it is read there; a property of that name is a property', () => {
    const schema = {
      type: 'object',
      properties: { nullable: { type: 'boolean' }, usage: { type: 'object', nullable: true } },
    };
    expect(asJsonSchema(schema)).toEqual({
      type: 'object',
      properties: { nullable: { type: 'boolean' }, usage: { anyOf: [{ type: 'object' }, { type: 'null' }] } },
    });
  });

  it('given a recursive reference to itself (draft 2019-09), it refers to its component', () => {
    const filter: Json = {
      $recursiveAnchor: true,
      type: 'object',
      properties: {
        filters: { type: 'array', items: { oneOf: [{ $ref: '#/components/schemas/Leaf' }, { $recursiveRef: '#' }] } },
      },
    };
    expect(asJsonSchema(filter, 'CompoundFilter')).toEqual({
      type: 'object',
      properties: {
        filters: {
          type: 'array',
          items: { oneOf: [{ $ref: '#/components/schemas/Leaf' }, { $ref: '#/components/schemas/CompoundFilter' }] },
        },
      },
    });
  });
});

describe('deviations from a published document', () => {
  const document = {
    components: { schemas: { Key: { type: 'object', properties: { data: { type: 'object', required: ['hash', 'name'] } } } } },
  };
  const at = '/components/schemas/Key/properties/data';

  it('given a field a route does not send, the schema no longer requires it, and nothing else changes', () => {
    const changed = withDeviations(document, [{ document: 'openrouter', at, omits: ['hash'], why: 'named by id' }]);
    expect(changed).toEqual({
      components: { schemas: { Key: { type: 'object', properties: { data: { type: 'object', required: ['name'] } } } } },
    });
    // The document itself is left as it was.
    expect(document.components.schemas.Key.properties.data.required).toEqual(['hash', 'name']);
  });

  it('given a deviation for a field not required, or a place with no required fields, it is refused as stale', () => {
    expect(() => withDeviations(document, [{ document: 'openrouter', at, omits: ['label'], why: '' }])).toThrow(
      /does not require label/,
    );
    expect(() =>
      withDeviations(document, [{ document: 'openrouter', at: '/components/schemas/Nope', omits: ['x'], why: '' }]),
    ).toThrow(/points nowhere/);
  });
});
