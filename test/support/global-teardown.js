'use strict';
const { createClient } = require('redis');

module.exports = async () => {
  const url = process.env.TEST_REDIS_URL;
  if (!url) {
    process.stdout.write(
      '\n!!! REDIS TESTS SKIPPED: no Redis answered at REDIS_URL and no redis-server could be started. ' +
        'Install redis-server or set REDIS_URL to run them. !!!\n\n',
    );
    return;
  }
  try {
    // Remove this run's keys (per-run prefix; never a FLUSHALL).
    // Bounded: a teardown that waits forever on Redis would hold the whole run.
    const client = createClient({ url, socket: { connectTimeout: 2000, reconnectStrategy: false } });
    client.on('error', () => {});
    await client.connect();
    for await (const keys of client.scanIterator({ MATCH: `mgtest:${process.env.TEST_RUN_ID}:*`, COUNT: 1000 })) {
      if (keys.length > 0) await client.unlink(keys);
    }
    await client.close();
  } finally {
    // Even when the clean-up failed: a throwaway redis-server left running would keep the run alive.
    if (globalThis.__throwawayRedis) globalThis.__throwawayRedis.kill('SIGTERM');
  }
};
