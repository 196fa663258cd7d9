import { creditsNumber } from '../../ledger/money';
import { mayManageBilling, mayManageKeys } from '../../identity/organization.decider';
import { availableOf, type ReadModels, reservedOf } from '../../projections/read-models';
import type { Session } from './sessions';

/** What the web app knows of the person signed in: who, their organizations, the active one's credits. */
export async function sessionView(readModels: ReadModels, session: Session) {
  const organizations = (await readModels.organizationsOf(session.userId)).sort((a, b) => a.createdAt - b.createdAt);
  const active = organizations.find((o) => o.orgId === session.activeOrgId) ?? null;
  let activeOrg = null;
  if (active) {
    const [b, member] = await Promise.all([
      readModels.balance(active.orgId),
      readModels.membership(active.orgId, session.userId),
    ]);
    activeOrg = {
      id: active.orgId,
      name: active.name,
      role: member?.role ?? 'member',
      manageKeys: mayManageKeys(member ?? undefined),
      billing: mayManageBilling(member ?? undefined),
      credits: {
        granted: creditsNumber(b.granted),
        spent: creditsNumber(b.spent),
        reserved: creditsNumber(reservedOf(b)),
        available: creditsNumber(availableOf(b)),
      },
    };
  }
  return {
    user: { id: session.userId, email: session.email },
    csrf: session.csrf,
    organizations: organizations.map((o) => ({ id: o.orgId, name: o.name })),
    activeOrg,
  };
}
