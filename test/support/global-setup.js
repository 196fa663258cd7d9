'use strict';
// Finds a real Redis for the tests: REDIS_URL (default 127.0.0.1:6379), else a throwaway
// redis-server on a free port. Without one, Redis tests are skipped — except under CI=true.
const { spawn, execFileSync } = require('node:child_process');
const net = require('node:net');
const { randomBytes } = require('node:crypto');
const { createClient } = require('redis');

async function answers(url) {
  const client = createClient({ url, socket: { connectTimeout: 1000, reconnectStrategy: false } });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    return false;
  } finally {
    if (client.isOpen) await client.close().catch(() => {});
  }
}

const freePort = () =>
  new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });

function hasRedisServer() {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function startThrowawayRedis() {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: 'ignore',
    detached: false,
  });
  const url = `redis://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (await answers(url)) return { url, child };
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  return null;
}

module.exports = async () => {
  process.env.TEST_RUN_ID = randomBytes(4).toString('hex');
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (await answers(url)) {
    process.env.TEST_REDIS_URL = url;
  } else if (hasRedisServer()) {
    const started = await startThrowawayRedis();
    if (started) {
      process.env.TEST_REDIS_URL = started.url;
      globalThis.__throwawayRedis = started.child;
    }
  }
  if (!process.env.TEST_REDIS_URL) {
    if (process.env.CI === 'true') {
      throw new Error(`CI=true but no Redis answers at ${url} and none could be started: Redis tests cannot be skipped in CI`);
    }
    process.env.TEST_REDIS_URL = '';
  }
};
