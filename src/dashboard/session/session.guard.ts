import {
  applyDecorators,
  CanActivate,
  createParamDecorator,
  ExecutionContext,
  Inject,
  Injectable,
  SetMetadata,
  UseGuards,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { parse as parseCookies } from 'cookie';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../../http/api-error';
import { IdentityService } from '../../identity/identity.service';
import type { ReadModels } from '../../projections/read-models';
import { READ_MODELS } from '../../runtime/runtime.module';
import { sameSecret } from './same-secret';
import { Session, SESSION_COOKIE, SessionTokens } from './sessions';

const NEEDS_ACTIVE_ORG = 'dashboard:needs-active-org';
/** Methods that change nothing: every other one must carry the session's CSRF token. */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** What the guard found, for the parameter decorators below (per request; gone with it). */
const signedIn = new WeakMap<FastifyRequest, { session: Session; activeOrgId: string | null }>();

/**
 * The dashboard's one door: a signed session cookie (never an API key) that is still live (not
 * signed out, not ended by a password change or a removal: read from the log), else 401; on a
 * state-changing request the session's CSRF token in `x-csrf-token`, else 403; and, for the routes
 * that work on the active organization, one the user (still) belongs to, else 404. In that order.
 */
@Injectable()
export class SessionGuard implements CanActivate {
  constructor(
    private readonly tokens: SessionTokens,
    private readonly reflector: Reflector,
    private readonly identity: IdentityService,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<FastifyRequest>();
    const session = this.tokens.verify(parseCookies(request.headers.cookie ?? '')[SESSION_COOKIE]);
    if (!session) throw new ApiError('invalid_api_key', 'not signed in');
    if (!(await this.identity.sessionLive(session.email, session))) {
      throw new ApiError('invalid_api_key', 'this session has ended: sign in again');
    }
    if (!SAFE_METHODS.has(request.method) && !sameSecret(String(request.headers['x-csrf-token'] ?? ''), session.csrf)) {
      throw new ApiError('forbidden', 'missing or wrong x-csrf-token header');
    }
    const needsActiveOrg = this.reflector.getAllAndOverride<boolean | undefined>(NEEDS_ACTIVE_ORG, [
      context.getHandler(),
      context.getClass(),
    ]);
    signedIn.set(request, { session, activeOrgId: needsActiveOrg ? await this.activeOrg(session) : null });
    return true;
  }

  /** The active organization, if the user (still) belongs to it: one membership read, whatever the user's count of organizations. */
  private async activeOrg(session: Session): Promise<string> {
    if (!session.activeOrgId || (await this.readModels.membership(session.activeOrgId, session.userId)) === null) {
      throw new ApiError('not_found', 'no active organization: create one or pick one');
    }
    return session.activeOrgId;
  }
}

/**
 * For signed-in people only (on a controller, or on a route of one that does not have it):
 * see SessionGuard. `activeOrg: true` also requires the session's active organization.
 */
export const SignedIn = (options: { activeOrg?: boolean } = {}) =>
  applyDecorators(SetMetadata(NEEDS_ACTIVE_ORG, options.activeOrg === true), UseGuards(SessionGuard));

function found(context: ExecutionContext) {
  const state = signedIn.get(context.switchToHttp().getRequest<FastifyRequest>());
  if (!state) throw new Error('a route reads the session without @SignedIn()');
  return state;
}

/** The signed-in session (the route needs `@SignedIn()`). */
export const CurrentSession = createParamDecorator(
  (_data: unknown, context: ExecutionContext): Session => found(context).session,
);

/** The active organization's id (the route needs `@SignedIn({ activeOrg: true })`). */
export const ActiveOrgId = createParamDecorator((_data: unknown, context: ExecutionContext): string => {
  const { activeOrgId } = found(context);
  if (activeOrgId === null) throw new Error('a route reads the active organization without @SignedIn({ activeOrg: true })');
  return activeOrgId;
});
