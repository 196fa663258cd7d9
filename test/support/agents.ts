// Coding-agent CLIs (installed as dev dependencies: native binaries from the npm registry) run
// unmodified against a test gateway, set up the way their own documentation says for a custom
// endpoint, each in scratch HOME and XDG directories so no real configuration is read.
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { tempDir } from './temp';

type TempDir = ReturnType<typeof tempDir>;

export interface AgentRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

const packageDir = (name: string) => dirname(require.resolve(`${name}/package.json`));
const CLAUDE = join(packageDir('@anthropic-ai/claude-code'), 'bin', 'claude.exe');
const OPENCODE = join(packageDir('opencode-ai'), 'bin', 'opencode.exe');
const GEMINI = join(packageDir('@google/gemini-cli'), 'bundle', 'gemini.js');

/** A package's directory, or null when it is not installed (the tests that need it then skip, saying so). */
function optionalPackageDir(name: string): string | null {
  try {
    return packageDir(name);
  } catch {
    return null;
  }
}

const CODEX_PACKAGE = optionalPackageDir('@openai/codex');
/** Codex CLI's launcher (a node script that starts the native binary for this platform), when installed. */
export const CODEX: string | null = CODEX_PACKAGE && join(CODEX_PACKAGE, 'bin', 'codex.js');

/** Runs a CLI to its end (killed after `timeoutMs`), in `work` as its working directory. */
function run(command: string, args: string[], env: Record<string, string>, cwd: string, timeoutMs: number): Promise<AgentRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** A scratch home with its XDG directories, and a working directory for the agent. */
function scratch(tmp: TempDir, name: string) {
  const root = join(tmp.path, `${name}-${Math.random().toString(36).slice(2)}`);
  const home = join(root, 'home');
  const work = join(root, 'work');
  for (const dir of [home, work]) mkdirSync(dir, { recursive: true });
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: 'C.UTF-8',
    TERM: 'dumb',
    SHELL: '/bin/bash',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    XDG_DATA_HOME: join(home, '.local', 'share'),
    XDG_CACHE_HOME: join(home, '.cache'),
    XDG_STATE_HOME: join(home, '.local', 'state'),
  };
  return { root, work, env };
}

/**
 * Claude Code in print mode, set up as its docs say for an LLM gateway: the messages base URL
 * (`{base}/api`: it appends `/v1/messages`), the key as ANTHROPIC_AUTH_TOKEN (sent as Bearer),
 * the model as ANTHROPIC_MODEL, and no non-essential traffic.
 */
export function claudeCode(
  tmp: TempDir,
  gateway: { baseUrl: string; key: string },
  model: string,
  prompt: string,
  extraArgs: string[] = [],
): Promise<AgentRun> {
  const { work, env } = scratch(tmp, 'claude');
  return run(
    CLAUDE,
    ['-p', prompt, '--output-format', 'json', ...extraArgs],
    {
      ...env,
      ANTHROPIC_BASE_URL: `${gateway.baseUrl}/api`,
      ANTHROPIC_AUTH_TOKEN: gateway.key,
      ANTHROPIC_MODEL: model,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
      DISABLE_AUTOUPDATER: '1',
      DISABLE_TELEMETRY: '1',
      DISABLE_ERROR_REPORTING: '1',
      // Its default is ten retries with back-off: a failing gateway would hold the test for minutes.
      CLAUDE_CODE_MAX_RETRIES: '1',
    },
    work,
    60_000,
  );
}

/**
 * `opencode run` with an openai-compatible provider pointing at the gateway, as opencode's docs
 * set up a custom provider, with no model limits configured (so it asks for its default cap).
 */
export function opencode(
  tmp: TempDir,
  gateway: { baseUrl: string; key: string },
  model: string,
  prompt: string,
): Promise<AgentRun> {
  const { root, work, env } = scratch(tmp, 'opencode');
  const config = join(root, 'opencode.json');
  writeFileSync(
    config,
    JSON.stringify({
      autoupdate: false,
      share: 'disabled',
      provider: {
        gateway: {
          npm: '@ai-sdk/openai-compatible',
          name: 'Model Gateway',
          options: { baseURL: `${gateway.baseUrl}/api/v1`, apiKey: gateway.key },
          models: { [model]: { name: model } },
        },
      },
      model: `gateway/${model}`,
      small_model: `gateway/${model}`,
    }),
  );
  return run(
    OPENCODE,
    ['run', '--format', 'json', prompt],
    { ...env, OPENCODE_CONFIG: config, OPENCODE_DISABLE_MODELS_FETCH: '1', OPENCODE_DISABLE_AUTOUPDATE: '1' },
    work,
    60_000,
  );
}

/** The text opencode printed (its JSON-lines `text` events). */
export function opencodeText(run: AgentRun): string {
  return run.stdout
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as { type?: string; part?: { text?: string } })
    .filter((event) => event.type === 'text')
    .map((event) => event.part?.text ?? '')
    .join('');
}

/**
 * `codex exec` with a custom model provider pointing at the gateway, as Codex's docs set one up
 * (config.toml in CODEX_HOME: `base_url = "{base}/api/v1"`, `wire_api = "responses"`, the key in
 * the variable `env_key` names). Non-interactive, no sandbox (none is available in a container),
 * in a scratch directory that is not a git repository.
 */
export function codexExec(
  tmp: TempDir,
  gateway: { baseUrl: string; key: string },
  model: string,
  prompt: string,
): Promise<AgentRun> {
  if (!CODEX) throw new Error('@openai/codex is not installed');
  const { root, work, env } = scratch(tmp, 'codex');
  const codexHome = join(root, 'codex-home');
  mkdirSync(codexHome, { recursive: true });
  writeFileSync(
    join(codexHome, 'config.toml'),
    [
      `model = ${JSON.stringify(model)}`,
      'model_provider = "gateway"',
      '',
      '[model_providers.gateway]',
      'name = "Model Gateway"',
      `base_url = ${JSON.stringify(`${gateway.baseUrl}/api/v1`)}`,
      'wire_api = "responses"',
      'env_key = "MODEL_GATEWAY_API_KEY"',
      // Fail fast: the test's gateway either answers or the test fails.
      'request_max_retries = 0',
      'stream_max_retries = 0',
      '',
    ].join('\n'),
  );
  return run(
    process.execPath,
    [CODEX, 'exec', '--json', '--skip-git-repo-check', '--dangerously-bypass-approvals-and-sandbox', prompt],
    { ...env, CODEX_HOME: codexHome, MODEL_GATEWAY_API_KEY: gateway.key, RUST_LOG: 'warn' },
    work,
    60_000,
  );
}

/**
 * Gemini CLI in non-interactive mode (`-p`), set up as its docs say for a custom endpoint: the
 * API key as GEMINI_API_KEY (sent as `x-goog-api-key`), the base URL as GOOGLE_GEMINI_BASE_URL
 * (`{base}/api`: Google's client appends `/v1beta/models/…`), the model with `-m`; its user
 * settings (in the scratch HOME) choose API-key auth and turn telemetry and usage statistics off.
 */
export function geminiCli(
  tmp: TempDir,
  gateway: { baseUrl: string; key: string },
  model: string,
  prompt: string,
  extraArgs: string[] = [],
): Promise<AgentRun> {
  const { env, work } = scratch(tmp, 'gemini');
  const settings = join(env.HOME, '.gemini', 'settings.json');
  mkdirSync(dirname(settings), { recursive: true });
  writeFileSync(
    settings,
    JSON.stringify({
      security: { auth: { selectedType: 'gemini-api-key' } },
      privacy: { usageStatisticsEnabled: false },
      telemetry: { enabled: false },
      general: { disableAutoUpdate: true, disableUpdateNag: true },
    }),
  );
  return run(
    process.execPath,
    [GEMINI, '-m', model, '-p', prompt, '--output-format', 'json', ...extraArgs],
    {
      ...env,
      GEMINI_API_KEY: gateway.key,
      GOOGLE_GEMINI_BASE_URL: `${gateway.baseUrl}/api`,
      GEMINI_TELEMETRY_ENABLED: 'false',
      // Headless runs need the working directory trusted (its docs' setting for automation).
      GEMINI_CLI_TRUST_WORKSPACE: 'true',
      // It would restart itself under a larger heap; one process is enough here.
      GEMINI_CLI_NO_RELAUNCH: 'true',
    },
    work,
    60_000,
  );
}
