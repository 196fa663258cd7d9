import { createServer, Server } from 'node:http';
import { auditLedger } from '../../src/audit/ledger-audit';
import { loadConfig } from '../../src/config/config';
import { openRuntime } from '../../src/runtime/runtime';
import { FakeUpstream, startFakeUpstream } from '../support/fake-upstream';
import { serviceEnv, startGateway, TEST_MODELS } from '../support/gateway';
import { chatCompletion } from '../support/streams';
import { Child, startService } from '../support/processes';
import { fundedOrganization, openTestRuntime, TestRuntime } from '../support/runtime';
import { createKey } from '../support/keys';

/**
 * Traces, exported over OTLP/HTTP (JSON) to a collector of the test's own: the span tree of a
 * request, its GenAI attributes against what was billed, and the trace context carried to the host.
 */

const M = TEST_MODELS;

interface OtlpAttribute {
  key: string;
  value: { stringValue?: string; intValue?: number | string; boolValue?: boolean; doubleValue?: number };
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: OtlpAttribute[];
  status?: { code?: number; message?: string };
}

/** A collector: every span of every export it receives, as the OTLP/HTTP JSON encoding has it. */
async function startCollector(): Promise<{ url: string; spans: OtlpSpan[]; server: Server }> {
  const spans: OtlpSpan[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      expect(req.url).toBe('/v1/traces');
      expect(req.headers['content-type']).toContain('application/json');
      const exported = JSON.parse(body) as { resourceSpans: Array<{ scopeSpans: Array<{ spans: OtlpSpan[] }> }> };
      for (const r of exported.resourceSpans) for (const s of r.scopeSpans) spans.push(...s.spans);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}`, spans, server };
}

const attributesOf = (span: OtlpSpan): Record<string, unknown> =>
  Object.fromEntries(
    span.attributes.map((a) => {
      const v = a.value;
      return [a.key, v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : (v.boolValue ?? v.doubleValue))];
    }),
  );

const SPAN_KIND = { internal: 1, server: 2, client: 3 };
const ERROR = 2;

/**
 * The gateway as a process of its own (the OTLP exporter loads its transport with a dynamic import,
 * which Jest's module sandbox does not run), on a log the test reads afterwards; stopping it
 * (SIGTERM) exports what is left.
 */
describe('traces (OpenTelemetry, OTLP/HTTP)', () => {
  let collector: Awaited<ReturnType<typeof startCollector>>;
  let fake: FakeUpstream;
  let t: TestRuntime;
  let env: Record<string, string>;
  let service: Child;
  let base: string;
  let key: { secret: string; keyId: string };
  let orgId: string;

  beforeAll(async () => {
    collector = await startCollector();
    fake = await startFakeUpstream();
    t = await openTestRuntime();
    env = serviceEnv(t, fake);
    orgId = await fundedOrganization(t.runtime, 100_000_000_000);
    key = await createKey(t.runtime, orgId, 'traced');
    await t.runtime.close();
    ({ service, base } = await startService({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: collector.url }));
  });
  afterAll(async () => {
    service.process.kill('SIGKILL');
    await fake.close();
    await t.cleanup();
    await new Promise((resolve) => collector.server.close(resolve));
  });

  const chat = (model: string, headers: Record<string, string> = {}) =>
    chatCompletion(base, key.secret, { model, max_tokens: 64 }, { headers });

  it("a request continues the client's trace: its span, children for admission, the host call (with the trace context) and settlement, GenAI attributes as billed; a fallback shows both calls", async () => {
    fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.', usage: { input: 30, output: 7, cacheRead: 10 } } });
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const clientSpanId = '00f067aa0ba902b7';
    const res = await chat(M.gpt.slug, { traceparent: `00-${traceId}-${clientSpanId}-01` });
    expect(res.status).toBe(200);
    await res.text();
    const requestId = res.headers.get('x-request-id')!;
    fake.on('fake-first', { kind: 'status', status: 503 });
    const fellBack = await chat(M.fallback.slug);
    expect(fellBack.status).toBe(200);
    await fellBack.text();
    const fallbackId = fellBack.headers.get('x-request-id')!;

    // Stopped, the service exports what it has left; the log says what was billed.
    service.process.kill('SIGTERM');
    expect(await service.exited()).toBe(0);
    const runtime = await openRuntime(loadConfig(env));
    await runtime.projector.catchUp();
    const entry = (await runtime.projections.recentRequests(orgId, 10)).find((e) => e.requestId === requestId)!;
    await runtime.close();

    const ofTrace = collector.spans.filter((s) => s.traceId === traceId);
    const server = ofTrace.find((s) => s.kind === SPAN_KIND.server)!;
    expect(server).toMatchObject({ name: `chat ${M.gpt.slug}`, parentSpanId: clientSpanId });
    expect(entry.cacheReadTokens).toBe(10);
    expect(attributesOf(server)).toMatchObject({
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': M.gpt.slug,
      'gen_ai.usage.input_tokens': entry.inputTokens + entry.cacheReadTokens + entry.cacheWriteTokens,
      'gen_ai.usage.cache_read.input_tokens': entry.cacheReadTokens,
      'gen_ai.usage.output_tokens': entry.outputTokens,
      'gateway.cost_nano_credits': entry.cost,
      'gateway.request_id': requestId,
      'gateway.org_id': orgId,
      'gateway.key_id': key.keyId,
      'gateway.outcome': 'ok',
      'http.response.status_code': 200,
    });

    const children = ofTrace.filter((s) => s.parentSpanId === server.spanId);
    expect(children.map((s) => s.name).sort()).toEqual(['admission', `chat ${M.gpt.hostModel}`, 'settlement']);
    const call = children.find((s) => s.kind === SPAN_KIND.client)!;
    expect(attributesOf(call)).toMatchObject({
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': M.gpt.hostModel,
      'gen_ai.request.max_tokens': 64,
      'gateway.host': 'fake-openai',
      'server.address': '127.0.0.1',
    });
    // The host was called within the same trace, its parent the call's span.
    const upstream = fake.requests.filter((r) => r.body?.model === M.gpt.hostModel).pop()!;
    expect(upstream.headers.traceparent).toBe(`00-${traceId}-${call.spanId}-01`);

    // Without a traceparent: a trace of its own; the fallback's two calls, the failed one an error.
    const fallback = collector.spans.find(
      (s) => s.kind === SPAN_KIND.server && attributesOf(s)['gateway.request_id'] === fallbackId,
    )!;
    expect(fallback.parentSpanId ?? '').toBe('');
    expect(attributesOf(fallback)['gateway.fallback']).toBe(true);
    const calls = collector.spans.filter((s) => s.parentSpanId === fallback.spanId && s.kind === SPAN_KIND.client);
    expect(calls).toHaveLength(2);
    expect(calls.filter((c) => c.status?.code === ERROR)).toHaveLength(1);
    // One span per host call, numbered in the order they were made (retries included).
    expect(calls.map((c) => attributesOf(c)['gateway.attempt']).sort()).toEqual([1, 2]);

    // No secret in any span.
    expect(JSON.stringify(collector.spans)).not.toContain(key.secret);
    expect(JSON.stringify(collector.spans)).not.toContain('upstream-openai-key');
  }, 60_000);
});

describe('traces with the collector down', () => {
  it('cost the traces, never the shutdown: every reservation settled, "stopped", exit 0', async () => {
    const fake = await startFakeUpstream();
    const t = await openTestRuntime();
    try {
      const env = serviceEnv(t, fake);
      const orgId = await fundedOrganization(t.runtime, 100_000_000_000);
      const { secret } = await createKey(t.runtime, orgId, 'untraced');
      await t.runtime.close();
      // The collector is down: nothing listens on port 1.
      const { service, base } = await startService({ ...env, OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:1' });
      fake.on(M.gpt.hostModel, { kind: 'reply', reply: { text: 'Hello.' } });
      const res = await chatCompletion(base, secret);
      expect(res.status).toBe(200);
      await res.text();
      service.process.kill('SIGTERM');
      expect(await service.exited()).toBe(0);
      expect(service.output()).toContain('traces not all exported at shutdown');
      expect(service.output()).toContain('model gateway stopped');
      const runtime = await openRuntime(loadConfig(env));
      try {
        await runtime.projector.catchUp();
        expect(await runtime.projections.balance(orgId)).toMatchObject({ reserved: 0, pending: 0 });
        expect((await auditLedger(runtime.events, runtime.projections)).differences).toEqual([]);
      } finally {
        await runtime.close();
      }
    } finally {
      await fake.close();
      await t.cleanup();
    }
  }, 60_000);
});

describe('no tracing configured', () => {
  it('without OTEL_EXPORTER_OTLP_ENDPOINT there is no tracing and no trace context sent to hosts', async () => {
    const plain = await startGateway();
    try {
      expect('tracing' in plain.app.getHttpAdapter().getInstance()).toBe(false);
      const res = await chatCompletion(plain.baseUrl, plain.key);
      expect(res.status).toBe(200);
      await res.text();
      expect(plain.fake.requests.at(-1)!.headers.traceparent).toBeUndefined();
    } finally {
      await plain.close();
    }
  });
});
