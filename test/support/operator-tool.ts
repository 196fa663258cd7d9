import { join } from 'node:path';
import { ROOT, startNode } from './processes';

const BIN = join(ROOT, 'bin/model-gateway.js');

export interface ToolRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the operator tool as an operator would, in its own process. */
export async function operatorTool(env: Record<string, string>, args: string[], stdin?: string): Promise<ToolRun> {
  const child = startNode(BIN, args, env);
  let stdout = '';
  let stderr = '';
  child.process.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  child.process.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
  if (stdin !== undefined) child.process.stdin!.end(stdin);
  else child.process.stdin!.end();
  const code = await child.exited();
  return { code, stdout, stderr };
}

/** The tool's `--json` answer; a non-zero exit throws with what it said. */
export async function operatorToolJson(env: Record<string, string>, args: string[], stdin?: string) {
  const run = await operatorTool(env, ['--json', ...args], stdin);
  if (run.code !== 0) throw new Error(`model-gateway ${args.join(' ')} failed (${run.code}): ${run.stderr}`);
  return JSON.parse(run.stdout);
}
