import { creditsNumber } from '../../ledger/money';
import type { ProjectionStore } from '../../projections/projection-store';
import { availableOf, reservedOf } from '../../projections/read-model';
import type { Session } from './sessions';

/** What the web app knows of the person signed in: who, their organizations, the active one's credits. */
export async function sessionView(projections: ProjectionStore, session: Session) {
  const organizations = (await projections.organizationsOf(session.userId)).sort((a, b) => a.createdAt - b.createdAt);
  const active = organizations.find((o) => o.orgId === session.activeOrgId) ?? null;
  let activeOrg = null;
  if (active) {
    const b = await projections.balance(active.orgId);
    activeOrg = {
      id: active.orgId,
      name: active.name,
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
