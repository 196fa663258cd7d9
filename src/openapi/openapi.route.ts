import type { FastifyInstance } from 'fastify';
import { openApiDocument } from './openapi.document';

/** GET /api/v1/openapi.json: the API's description, built once from the schemas the routes validate with. */
export function serveOpenApiDocument(fastify: FastifyInstance): void {
  const document = JSON.stringify(openApiDocument());
  fastify.get('/api/v1/openapi.json', (_request, reply) => void reply.type('application/json').send(document));
}
