import type { HostKindName } from '../catalogue/catalogue';
import { anthropicHost } from './anthropic/anthropic.host';
import type { HostKind } from './host-kind';
import { openAiHost } from './openai/openai.host';

/** Adding a kind of host is adding a folder and a line here. */
export const HOST_KINDS: Record<HostKindName, HostKind> = {
  openai: openAiHost,
  anthropic: anthropicHost,
};
