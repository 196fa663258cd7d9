// App-wide state: the public config, the signed-in session, and a few cached look-ups.
import { api, Config, Model, Session, setCsrf } from './api';

export const store: { config: Config | null; session: Session | null } = { config: null, session: null };

const listeners = new Set<(previous: Session | null) => void>();

/** Called after every session change with the session before it. */
export function onSessionChange(listener: (previous: Session | null) => void): void {
  listeners.add(listener);
}

export function setSession(session: Session | null): void {
  const previous = store.session;
  store.session = session;
  setCsrf(session?.csrf ?? null);
  if (!session) models = null;
  for (const listener of listeners) listener(previous);
}

export async function refreshSession(): Promise<Session> {
  const session = await api<Session>('GET', '/session');
  setSession(session);
  return session;
}

export async function switchOrg(orgId: string): Promise<void> {
  setSession(await api<Session>('POST', '/organizations/active', { orgId }));
}

let models: Promise<Model[]> | null = null;
/** The model list hardly changes: fetched once per sign-in, retried after a failure. */
export function getModels(): Promise<Model[]> {
  models ??= api<{ data: Model[] }>('GET', '/models').then(
    (r) => r.data,
    (error) => {
      models = null;
      throw error;
    },
  );
  return models;
}

export function navigate(path: string): void {
  location.hash = `#${path}`;
}
