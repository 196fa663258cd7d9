import { handleCommand, Handled, newStream, readStreamState } from '../../eventstore/command-handler';
import type { EventStore } from '../../eventstore/event-store';
import { organizationStream } from '../../identity/identity.events';
import { initialOrganization, type Organization, organizationDecider } from '../../identity/organization.decider';
import { type ApiKeyCommand, apiKeyDecider } from './api-key.decider';
import { type ApiKeyEvent, apiKeyStream } from './api-key.events';

/**
 * A key may be changed by two people at the same moment (two owners, two management calls): a
 * change or a revocation is decided again on the stream as it now is, a few times, instead of
 * failing on the first conflict.
 */
const CONCURRENT = { retries: 3 };

const organizationState = async (store: EventStore, orgId: string | null): Promise<Organization> =>
  orgId === null ? initialOrganization() : (await readStreamState(store, organizationStream(orgId), organizationDecider)).state;

/**
 * Runs a command on a key's stream, decided with the state of the organization the asker acts in
 * (for the operator naming none, the key's own): read both, decide, append with the key stream's
 * revision. A new key's stream is named here, so nothing is read of it.
 */
export async function handleKeyCommand(store: EventStore, command: ApiKeyCommand): Promise<Handled<ApiKeyEvent>> {
  const stream = apiKeyStream(command.keyId);
  if (command.type === 'CreateApiKey') {
    const decider = apiKeyDecider(await organizationState(store, command.orgId));
    return handleCommand(store, stream, decider, command, { known: newStream(decider) });
  }
  if (command.orgId !== null) {
    const [organization, key] = await Promise.all([
      organizationState(store, command.orgId),
      readStreamState(store, stream, apiKeyDecider()),
    ]);
    return handleCommand(store, stream, apiKeyDecider(organization), command, { known: key, ...CONCURRENT });
  }
  const key = await readStreamState(store, stream, apiKeyDecider());
  const organization = await organizationState(store, key.state.status === 'none' ? null : key.state.orgId);
  return handleCommand(store, stream, apiKeyDecider(organization), command, { known: key, ...CONCURRENT });
}
