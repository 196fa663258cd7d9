import { anthropicHost } from './anthropic/anthropic.host';
import { azureHost } from './azure/azure.host';
import { bedrockHost } from './bedrock/bedrock.host';
import { geminiHost } from './gemini/gemini.host';
import type { HostKind } from './host-kind';
import { openAiHost } from './openai/openai.host';
import { openAiResponsesHost } from './openai-responses/openai-responses.host';

/**
 * Every kind of host. Adding one is adding its folder and its entry here: the kind names a
 * catalogue may use (and its message for any other) are derived from this list.
 */
const KINDS = [openAiHost, anthropicHost, openAiResponsesHost, azureHost, bedrockHost, geminiHost] as const;

export type HostKindName = (typeof KINDS)[number]['name'];

export const HOST_KIND_NAMES: readonly HostKindName[] = KINDS.map((kind) => kind.name);

/** The kinds by name, looked up on every request. */
export const HOST_KINDS = Object.fromEntries(KINDS.map((kind) => [kind.name, kind])) as Readonly<Record<HostKindName, HostKind>>;

export const isHostKindName = (name: unknown): name is HostKindName =>
  typeof name === 'string' && Object.hasOwn(HOST_KINDS, name);
