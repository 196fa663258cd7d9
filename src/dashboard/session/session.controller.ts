import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res, UseFilters } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../http/api-error';
import { bodyValidation } from '../../http/validation';
import { IdentityRuleError } from '../../identity/identity.decider';
import { IdentityService } from '../../identity/identity.service';
import type { ProjectionStore } from '../../projections/projection-store';
import { PROJECTIONS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { DASHBOARD_SETTINGS, type DashboardSettings } from './dashboard-settings';
import { CurrentSession, SignedIn } from './session.guard';
import { CredentialsDto } from './session.dto';
import { setSessionCookie } from './session-cookie';
import { sessionView } from './session-view';
import { type Session, SessionTokens } from './sessions';
import { SignIn } from './sign-in';

/** Signing up, in and out, and what the web app needs before and after: its config, the session. */
@Controller('dashboard/api')
@UseFilters(dashboardErrors)
export class SessionController {
  constructor(
    private readonly identity: IdentityService,
    private readonly signIn: SignIn,
    private readonly tokens: SessionTokens,
    @Inject(PROJECTIONS) private readonly projections: ProjectionStore,
    @Inject(DASHBOARD_SETTINGS) private readonly settings: DashboardSettings,
  ) {}

  @Get('config')
  config(@Req() request: FastifyRequest) {
    const origin = `${request.protocol}://${request.headers.host}`;
    return {
      signupEnabled: this.settings.signupEnabled,
      baseUrls: { chatCompletions: `${origin}/api/v1`, messages: `${origin}/api` },
    };
  }

  @Post('signup')
  @HttpCode(201)
  async signup(
    @Body(bodyValidation) body: CredentialsDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    if (!this.settings.signupEnabled) throw new ApiError('forbidden', 'sign-up is turned off: ask an operator for an account');
    const user = await this.identity.registerUser(body.email, body.password).catch((error: unknown) => {
      throw signupError(error);
    });
    const { token, session } = this.tokens.issue(user.userId, user.email, null);
    setSessionCookie(request, reply, token);
    return { user: { id: user.userId, email: user.email }, csrf: session.csrf };
  }

  @Post('signin')
  @HttpCode(200)
  async signin(
    @Body(bodyValidation) body: CredentialsDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const retryAfterSeconds = this.signIn.retryAfterSeconds(body.email, request.ip);
    if (retryAfterSeconds > 0) {
      void reply.header('retry-after', String(retryAfterSeconds));
      throw new ApiError('rate_limited', `too many failed sign-ins: try again in ${retryAfterSeconds} s`, { retryAfterSeconds });
    }
    const user = await this.signIn.check(body.email, body.password, request.ip);
    const { token, session } = this.tokens.issue(user.userId, user.email, user.activeOrgId);
    setSessionCookie(request, reply, token);
    return { user: { id: user.userId, email: user.email }, csrf: session.csrf };
  }

  @Post('signout')
  @HttpCode(204)
  @SignedIn()
  signout(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): void {
    setSessionCookie(request, reply, null);
  }

  @Get('session')
  @SignedIn()
  async current(@CurrentSession() session: Session) {
    return sessionView(this.projections, session);
  }
}

/** A refused sign-up as the person should read it. */
function signupError(error: unknown): unknown {
  if (error instanceof IdentityRuleError && error.code === 'user_exists')
    return new ApiError('conflict', 'an account with this email exists: sign in');
  if (error instanceof IdentityRuleError) return new ApiError('invalid_request', error.message);
  return error;
}
