import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { GatewayMetrics } from './metrics';

/**
 * GET /metrics on the service's port, or on a port of its own (METRICS_PORT: kept off the public
 * port), closed with the application.
 */
export async function serveMetrics(
  fastify: FastifyInstance,
  metrics: GatewayMetrics,
  host: string,
  port: number | null,
): Promise<void> {
  if (port === null) {
    fastify.get('/metrics', async (_request, reply) => {
      void reply.header('content-type', metrics.contentType);
      return metrics.text();
    });
    return;
  }
  const server = createServer((request, response) => {
    if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics here\n');
      return;
    }
    metrics.text().then(
      (text) => response.writeHead(200, { 'content-type': metrics.contentType }).end(text),
      (error: Error) => response.writeHead(500, { 'content-type': 'text/plain' }).end(`${error.message}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const listening = (server.address() as AddressInfo).port;
  // Where it listens (a port of 0 picks one), for the start-up line and for tests.
  fastify.decorate('metricsUrl', `http://${host}:${listening}/metrics`);
  fastify.addHook('onClose', (_instance, done) => server.close(() => done()));
}
