import { creditsNumber } from '../../ledger/money';
import { mayManageKeys } from '../../identity/organization.decider';
import type { ProjectionStore } from '../../projections/projection-store';
import { availableOf, reservedOf } from '../../projections/read-model';
import type { Session } from './sessions';

/** What the web app knows of the person signed in: who, their organizations, the active one's credits. */
export async function sessionView(projections: ProjectionStore, session: Session) {
  const organizations = (await projections.organizationsOf(session.userId)).sort((a, b) => a.createdAt - b.createdAt);
  const active = organizations.find((o) => o.orgId === session.activeOrgId) ?? null;
  let activeOrg = null;
  if (active) {
    const [b, member] = await Promise.all([
      projections.balance(active.orgId),
      projections.membership(active.orgId, session.userId),
    ]);
    activeOrg = {
      id: active.orgId,
      name: active.name,
      role: member?.role ?? 'member',
      manageKeys: mayManageKeys(member ?? undefined),
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
