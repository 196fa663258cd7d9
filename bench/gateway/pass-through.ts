/**
 * The bench's reference: a bare pass-through, in a process of its own — Fastify receiving, undici
 * forwarding to the upstream, the upstream's body piped back. No key, no validation, no catalogue,
 * no billing. It shows what one more Node HTTP hop costs on this machine, the floor under any
 * gateway written this way.
 *
 *   node dist/bench/gateway/pass-through.js <upstream origin>
 *
 * Reports `{ port }` to its parent over IPC once it listens; stops when the parent goes away.
 */
import Fastify from 'fastify';
import { Pool } from 'undici';

async function main(): Promise<void> {
  const upstream = new Pool(process.argv[2], { connections: 256, pipelining: 1, keepAliveTimeout: 30_000 });
  const app = Fastify();
  app.post('/v1/chat/completions', async (request, reply) => {
    const response = await upstream.request({
      path: '/v1/chat/completions',
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request.body),
    });
    return reply
      .status(response.statusCode)
      .header('content-type', String(response.headers['content-type'] ?? 'application/json'))
      .send(response.body);
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const stop = () =>
    void app
      .close()
      .then(() => upstream.close())
      .finally(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('disconnect', stop);
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  if (process.send) process.send({ port });
}

main().catch((error: Error) => {
  process.stderr.write(`bench pass-through failed: ${error.message}\n`);
  process.exit(1);
});
