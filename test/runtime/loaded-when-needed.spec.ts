import { execFileSync } from 'node:child_process';
import { ROOT } from '../support/processes';

/**
 * Libraries the service needs only for some settings are loaded when they are used, not with the
 * service: the cloud credential libraries (Azure's identity, Google's auth, AWS's credential chain:
 * about 10 MB of memory and 280 modules) by a host's first call that needs one, and OpenTelemetry's
 * SDK (about 300 modules) when traces are exported. Each test runs in a process of its own: jest's
 * module registry is not Node's.
 */
const loadedOf = (libraries: string[]) =>
  `(() => ${JSON.stringify(libraries)}.filter((m) => Object.keys(require.cache).some((f) => f.includes('/node_modules/' + m + '/'))))`;

const LIBRARIES = ['@azure/identity', 'google-auth-library', '@aws-sdk/credential-provider-node'];

it('loads no cloud credential library with the service or a host’s authorizer, only with a call that needs it', () => {
  // The service's modules, an authorizer of each kind made as a catalogue's host makes it, then one Bedrock call signed.
  const script = `
    const loaded = ${loadedOf(LIBRARIES)};
    require('./dist/src/app');
    const { HOST_KINDS } = require('./dist/src/hosts/hosts');
    const host = (settings) => ({ id: 'h', baseUrl: 'https://example.invalid', apiKey: null, settings });
    const authorizers = [
      HOST_KINDS.azure.authorizer(host({ auth: 'entra' })),
      HOST_KINDS.vertex.authorizer(host({ credentialsFile: '' })),
      HOST_KINDS.bedrock.authorizer(host({ region: 'us-east-1' })),
    ];
    const atStart = loaded();
    const url = new URL('https://bedrock-runtime.us-east-1.amazonaws.com/model/m/converse');
    authorizers[2].headers({ method: 'POST', url, headers: { 'content-type': 'application/json' }, body: '{}' }).then((signed) =>
      console.log(JSON.stringify({ atStart, made: authorizers.map((a) => a !== null), signed: Object.keys(signed), afterSigning: loaded() })),
    );
  `;
  // AWS's chain finds these in the environment first: no file, no metadata service.
  const env = { ...process.env, AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'example-secret', AWS_PROFILE: '' };
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, env, encoding: 'utf8' })) as unknown;
  expect(out).toEqual({
    atStart: [],
    made: [true, true, true],
    signed: expect.arrayContaining(['authorization', 'x-amz-date']) as unknown,
    afterSigning: ['@aws-sdk/credential-provider-node'],
  });
});

const TRACING_SDK = ['@opentelemetry/sdk-trace-node', '@opentelemetry/exporter-trace-otlp-http', '@opentelemetry/resources'];

it('loads no OpenTelemetry SDK with the service, only when traces are exported', () => {
  // The service's modules, then its observation of requests set up without a collector, then with one.
  const script = `
    const loaded = ${loadedOf(TRACING_SDK)};
    require('./dist/src/app');
    const { observeRequests } = require('./dist/src/observability/observe-requests');
    const fastify = () => require('fastify')({ logger: false });
    const sources = { logging: false, gauges: {}, eventLog: { onAppend() {} }, settled: async () => undefined };
    const settings = (otlpEndpoint) => ({ host: '127.0.0.1', metrics: false, metricsPort: null, otlpEndpoint });
    (async () => {
      const atStart = loaded();
      await observeRequests(fastify(), settings(null), sources);
      const withoutCollector = loaded();
      const traced = fastify();
      await observeRequests(traced, settings('http://127.0.0.1:1'), sources);
      const exporting = loaded();
      await traced.close();
      console.log(JSON.stringify({ atStart, withoutCollector, exporting, tracing: traced.hasDecorator('tracing') }));
    })();
  `;
  const out = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: ROOT, encoding: 'utf8' })) as unknown;
  expect(out).toEqual({ atStart: [], withoutCollector: [], exporting: TRACING_SDK, tracing: true });
});
