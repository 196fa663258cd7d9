import { Body, Controller, Get, HttpCode, Inject, Post, Req, Res, UseFilters } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiError } from '../../http/api-error';
import { IdentityService } from '../../identity/identity.service';
import { bodyValidation } from '../../http/validation';
import type { Config } from '../../config/config';
import type { ReadModels } from '../../projections/read-models';
import { CONFIG, READ_MODELS } from '../../runtime/runtime.module';
import { dashboardErrors } from '../dashboard-error';
import { DASHBOARD_SETTINGS, type DashboardSettings } from './dashboard-settings';
import { CurrentSession, SignedIn } from './session.guard';
import { CredentialsDto, PasswordChangeDto } from './session.dto';
import { setSessionCookie } from './session-cookie';
import { sessionView } from './session-view';
import { type Session, SessionTokens } from './sessions';
import { SignIn, SignUp } from './sign-in';

/** Signing up, in and out, and what the web app needs before and after: its config, the session. */
@Controller('dashboard/api')
@UseFilters(dashboardErrors)
export class SessionController {
  constructor(
    private readonly signIn: SignIn,
    private readonly signUp: SignUp,
    private readonly tokens: SessionTokens,
    private readonly identity: IdentityService,
    @Inject(READ_MODELS) private readonly readModels: ReadModels,
    @Inject(DASHBOARD_SETTINGS) private readonly settings: DashboardSettings,
    @Inject(CONFIG) private readonly configuration: Config,
  ) {}

  /**
   * What the web app needs before anyone signs in. The API's base URLs are the configured public
   * one, else paths (the browser puts its own origin in front): never the request's Host header.
   */
  @Get('config')
  config() {
    const origin = this.configuration.publicBaseUrl ?? '';
    return {
      signupEnabled: this.settings.signupEnabled,
      baseUrls: { chatCompletions: `${origin}/api/v1`, messages: `${origin}/api` },
    };
  }

  /** 202 whether or not the email already had an account (see SignUp): the person signs in next. */
  @Post('signup')
  @HttpCode(202)
  async signup(
    @Body(bodyValidation) body: CredentialsDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    if (!this.settings.signupEnabled) throw new ApiError('forbidden', 'sign-up is turned off: ask an operator for an account');
    await withRetryAfter(reply, this.signUp.register(body.email, body.password, request.ip));
    return { message: 'if this email had no account, it has one now: sign in with it' };
  }

  @Post('signin')
  @HttpCode(200)
  async signin(
    @Body(bodyValidation) body: CredentialsDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const user = await withRetryAfter(reply, this.signIn.check(body.email, body.password, request.ip));
    const { token, session } = this.tokens.issue(user, user.activeOrgId);
    setSessionCookie(request, reply, token);
    return { user: { id: user.userId, email: user.email }, csrf: session.csrf };
  }

  /** Ends this session on every instance (the cookie is recorded as signed out in the log), not only in this browser. */
  @Post('signout')
  @HttpCode(204)
  @SignedIn()
  async signout(
    @CurrentSession() session: Session,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<void> {
    await this.identity.signOut(session.email, session);
    setSessionCookie(request, reply, null);
  }

  /**
   * A new password, with the current one (checked and throttled as a sign-in): every session of the
   * user ends, everywhere; this one goes on in a new session (a new cookie and CSRF token).
   */
  @Post('password')
  @HttpCode(200)
  @SignedIn()
  async changePassword(
    @Body(bodyValidation) body: PasswordChangeDto,
    @CurrentSession() session: Session,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    await withRetryAfter(reply, this.signIn.confirm(session.email, body.currentPassword, request.ip));
    const { sessionGeneration } = await this.identity.changePassword(session.email, session.userId, body.newPassword);
    const renewed = this.tokens.issue({ ...session, sessionGeneration }, session.activeOrgId);
    setSessionCookie(request, reply, renewed.token);
    return { csrf: renewed.session.csrf };
  }

  @Get('session')
  @SignedIn()
  async current(@CurrentSession() session: Session) {
    return sessionView(this.readModels, session);
  }
}

/** A throttled attempt's answer carries Retry-After. */
async function withRetryAfter<T>(reply: FastifyReply, attempt: Promise<T>): Promise<T> {
  try {
    return await attempt;
  } catch (error) {
    const seconds = error instanceof ApiError ? error.details.retryAfterSeconds : undefined;
    if (typeof seconds === 'number') void reply.header('retry-after', String(seconds));
    throw error;
  }
}
