/**
 * Sticky-routing bench: `npm run bench:sticky` (about ten seconds; not part of the tests).
 *
 * One agent conversation of 20 turns (Claude Code's shape: a long system prompt marked for caching,
 * the whole conversation resent every turn, its session in `metadata.user_id`) over a model with two
 * hosts, through this checkout's gateway (in this process, SQLite log in a temporary directory), twice:
 * with cache-sticky routing (the default) and with it off (STICKY_ROUTING=off).
 *
 * The two hosts are fakes of the messages format, each with a prompt cache of its own: a request
 * reads from the cache the longest earlier prompt of the same host that it begins with (5 minutes'
 * life), and writes the rest. Two scenarios move turns between the hosts:
 *   - the catalogue's order, the first host overloaded (529) during turns 5, 11 and 17, the second
 *     during turn 14 (bursts as real providers have them): without stickiness the turn after a
 *     burst goes back to the first host, whose cache lacks what the other served;
 *   - `provider.sort: "throughput"` over two hosts of about the same speed, measured with noise
 *     (the health reader the gateway is given): without stickiness each turn goes to whichever
 *     read faster last, to a cold cache as often as not.
 *
 * Printed: per run, the host of each turn, the share of input tokens read from the cache, and the
 * cost at the catalogue's prices (the anthropic kind's: input $3, cache reads $0.30, 5-minute cache
 * writes $3.75, output $15 per million tokens), from the ledger's settlements.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createApp } from '../src/app';
import { Catalogue } from '../src/catalogue/catalogue';
import { loadConfig } from '../src/config/config';
import { OPERATOR } from '../src/keys/api-key/api-key.decider';
import { CreateKeyHandler } from '../src/keys/create/create-key.handler';
import type { ReservationSettled } from '../src/ledger/ledger.events';
import { formatCredits } from '../src/ledger/money';
import { openRuntime } from '../src/runtime/runtime';

const TURNS = 20;

/** What moves a conversation between the two hosts in a scenario. */
interface Scenario {
  name: string;
  /** Turns during which each host answers 529 (overloaded). */
  overloaded: Record<string, ReadonlySet<number>>;
  /** The client's provider preferences. */
  provider?: Record<string, unknown>;
  /** Measured throughput (tokens/s) of each host at a turn, for `sort: "throughput"`. */
  throughput?: (hostId: string, turn: number) => number;
}

/** Two hosts of about the same speed, measured with noise: which reads faster changes from turn to turn. */
function noisyThroughput(hostId: string, turn: number): number {
  const seed = (turn * 7919 + (hostId === 'host-a' ? 0 : 104_729)) % 1_000;
  return 60 + ((seed * 48_271) % 997) / 50;
}

const SCENARIOS: Scenario[] = [
  {
    name: 'catalogue order; host A overloaded in turns 5, 11, 17, host B in turn 14',
    overloaded: { 'host-a': new Set([5, 11, 17]), 'host-b': new Set([14]) },
  },
  {
    name: 'provider.sort "throughput" over two hosts of about the same measured speed (noisy readings), no failures',
    overloaded: { 'host-a': new Set(), 'host-b': new Set() },
    provider: { sort: 'throughput' },
    throughput: noisyThroughput,
  },
];
const CACHE_LIFE_MS = 5 * 60_000;
/** The agent's instructions: about 3,000 tokens, as coding agents send. */
const SYSTEM = Array.from({ length: 300 }, (_, i) => `Rule ${i}: keep the change small and tested.`).join(' ');
const tokens = (text: string) => Math.ceil(text.length / 4);

interface Block {
  role: string;
  text: string;
}

/** A messages-format host with a prompt cache of its own, overloaded during its turns. */
async function fakeHost(
  id: string,
  overloaded: ReadonlySet<number>,
  turn: () => number,
): Promise<{ url: string; server: Server }> {
  const cache = new Map<string, number>();
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      const body = JSON.parse(raw) as {
        model: string;
        system: Array<{ text: string }>;
        messages: Array<{ role: string; content: string | Array<{ text: string }> }>;
      };
      if (overloaded.has(turn())) {
        res.writeHead(529, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }));
      }
      const blocks: Block[] = [
        ...body.system.map((s) => ({ role: 'system', text: s.text })),
        ...body.messages.map((m) => ({
          role: m.role,
          text: typeof m.content === 'string' ? m.content : m.content.map((c) => c.text).join(''),
        })),
      ];
      // The prefix hash after each block: the longest one cached (and alive) is read, the rest written.
      const now = Date.now();
      const hash = createHash('sha256');
      const prefixes = blocks.map((b) => hash.update(`${b.role}\u0000${b.text}\u0001`).copy().digest('hex'));
      let read = 0;
      for (let k = prefixes.length; k > 0; k--) {
        if ((cache.get(prefixes[k - 1]) ?? 0) > now) {
          read = k;
          break;
        }
      }
      const count = (from: number, to: number) => blocks.slice(from, to).reduce((n, b) => n + tokens(b.text), 0);
      for (const prefix of prefixes.slice(0, read)) cache.set(prefix, now + CACHE_LIFE_MS);
      cache.set(prefixes[prefixes.length - 1], now + CACHE_LIFE_MS);
      const text = `Turn ${turn()}: done. ${'The change is in place and its test passes. '.repeat(8)}`;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          id: `msg_${turn()}_${id}`,
          type: 'message',
          role: 'assistant',
          model: body.model,
          content: [{ type: 'text', text }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: {
            input_tokens: 0,
            cache_creation_input_tokens: count(read, blocks.length),
            cache_read_input_tokens: count(0, read),
            output_tokens: tokens(text),
          },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, server };
}

interface Run {
  hosts: string[];
  inputTokens: number;
  cacheReadTokens: number;
  cost: number;
}

async function conversation(scenario: Scenario, sticky: boolean): Promise<Run> {
  let turn = 0;
  const [a, b] = await Promise.all([
    fakeHost('host-a', scenario.overloaded['host-a'], () => turn),
    fakeHost('host-b', scenario.overloaded['host-b'], () => turn),
  ]);
  const measured = scenario.throughput;
  const hostHealth = measured && {
    of: (hostId: string) => ({ firstByteMs: null, outputTokensPerSecond: measured(hostId, turn) }),
  };
  const dataDir = mkdtempSync(join(tmpdir(), 'sticky-bench-'));
  const catalogueFile = join(dataDir, 'catalogue.json');
  writeFileSync(
    catalogueFile,
    JSON.stringify({
      hosts: [
        { id: 'host-a', kind: 'anthropic', baseUrl: a.url },
        { id: 'host-b', kind: 'anthropic', baseUrl: b.url },
      ],
      models: [
        {
          slug: 'bench/agent',
          id: '5e5e5e5e-0000-4000-8000-000000000001',
          name: 'Agent model',
          contextLength: 200_000,
          maxOutputTokens: 4096,
          hosts: [
            { host: 'host-a', model: 'agent-a', pricing: { input: '3.00', output: '15.00' } },
            { host: 'host-b', model: 'agent-b', pricing: { input: '3.00', output: '15.00' } },
          ],
        },
      ],
    }),
  );
  const config = loadConfig({
    DATA_DIR: dataDir,
    CATALOGUE_PATH: catalogueFile,
    SIMULATED_HOST_PORT: 'off',
    STICKY_ROUTING: sticky ? 'on' : 'off',
    METRICS: 'off',
  });
  const runtime = await openRuntime(config);
  const app = await createApp(runtime, { logger: false, catalogue: Catalogue.load(catalogueFile, {}), hostHealth });
  await app.listen(0, '127.0.0.1');
  const base = `http://127.0.0.1:${(app.getHttpServer().address() as AddressInfo).port}`;
  try {
    const { orgId } = await runtime.identity.createOrganization('Bench');
    await runtime.ledger.grant(orgId, 1_000_000_000_000, 'bench');
    const { secret } = await new CreateKeyHandler(runtime.events).execute({
      orgId,
      actor: OPERATOR,
      name: 'bench',
      settings: {},
    });
    await runtime.projector.catchUp();

    const messages: Array<{ role: string; content: string }> = [];
    for (turn = 1; turn <= TURNS; turn++) {
      messages.push({ role: 'user', content: `Turn ${turn}: ${'Here is the next file to change, with its tests. '.repeat(16)}` });
      const res = await fetch(`${base}/api/v1/messages`, {
        method: 'POST',
        headers: {
          'x-api-key': secret,
          'anthropic-version': '2023-06-01',
          'content-type': 'application/json',
          ...(scenario.provider ? { 'x-gateway-provider': JSON.stringify(scenario.provider) } : {}),
        },
        body: JSON.stringify({
          model: 'bench/agent',
          max_tokens: 1024,
          system: [{ type: 'text', text: SYSTEM, cache_control: { type: 'ephemeral' } }],
          messages,
          metadata: { user_id: 'user_bench_session_1' },
        }),
      });
      const reply = (await res.json()) as { content?: Array<{ text: string }> };
      if (res.status !== 200) throw new Error(`turn ${turn}: ${res.status} ${JSON.stringify(reply)}`);
      messages.push({ role: 'assistant', content: reply.content!.map((c) => c.text).join('') });
    }
    await runtime.projector.catchUp();
    const settled = (await runtime.events.readAll(0, 100_000))
      .filter((e) => e.type === 'ReservationSettled')
      .map((e) => e.data as ReservationSettled['data']);
    return {
      hosts: settled.map((s) => (s.host === 'host-a' ? 'A' : 'B')),
      inputTokens: settled.reduce((n, s) => n + s.inputTokens + (s.cacheReadTokens ?? 0) + (s.cacheWriteTokens ?? 0), 0),
      cacheReadTokens: settled.reduce((n, s) => n + (s.cacheReadTokens ?? 0), 0),
      cost: settled.reduce((n, s) => n + s.amount, 0),
    };
  } finally {
    await app.close();
    await runtime.close();
    a.server.close();
    b.server.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const lines = [`${TURNS}-turn agent conversation over a model with two hosts`];
  for (const scenario of SCENARIOS) {
    const sticky = await conversation(scenario, true);
    const loose = await conversation(scenario, false);
    lines.push(
      '',
      `${scenario.name}:`,
      '',
      '| routing | host per turn | cache-read share of input | cost (USD) |',
      '| --- | --- | --- | --- |',
    );
    for (const [name, run] of [
      ['sticky (default)', sticky],
      ['not sticky (STICKY_ROUTING=off)', loose],
    ] as const) {
      const share = ((100 * run.cacheReadTokens) / run.inputTokens).toFixed(1);
      lines.push(`| ${name} | ${run.hosts.join('')} | ${share} % | ${formatCredits(run.cost)} |`);
    }
    lines.push('', `sticky routing costs ${((100 * (loose.cost - sticky.cost)) / loose.cost).toFixed(1)} % less`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}

main().catch((error: Error) => {
  process.stderr.write(`${error.stack ?? error.message}\n`);
  process.exit(1);
});
