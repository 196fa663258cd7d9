import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req, Res, UseFilters } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Type } from 'class-transformer';
import {
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { parse as parseCookies, serialize as serializeCookie } from 'cookie';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { timingSafeEqual } from 'node:crypto';
import { Catalogue } from '../catalogue/catalogue';
import type { Config } from '../config/config';
import { ApiError, SurfaceErrorFilter } from '../http/api-error';
import { bodyValidation } from '../http/validation';
import { IdentityRuleError, normalizeEmail } from '../identity/identity.decider';
import { IdentityService } from '../identity/identity.service';
import { hashPassword, verifyPassword } from '../identity/secrets';
import { creditsNumber } from '../ledger/money';
import { InferenceCommand } from '../inference/inference.command';
import type { ProjectionStore } from '../projections/projection-store';
import { availableOf, dayOf, RequestLogEntry } from '../projections/read-model';
import { CONFIG, PROJECTIONS } from '../runtime/runtime.module';
import { nativeWire } from '../surfaces/native/native.wire';
import { respond } from '../surfaces/respond';
import { Session, SESSION_COOKIE, SESSION_TTL_MS, SessionTokens } from './sessions';
import { SignInThrottle } from './sign-in-throttle';

/** The playground bills the active organization under this pseudo key. */
export const PLAYGROUND_KEY = 'playground';

export class CredentialsDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(254)
  email: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(1024)
  password: string;
}

export class NameDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  name: string;
}

export class ActiveOrgDto {
  @IsString()
  @IsNotEmpty()
  orgId: string;
}

export class PlaygroundMessageDto {
  @IsIn(['user', 'assistant'])
  role: 'user' | 'assistant';

  @IsString()
  @IsNotEmpty()
  content: string;
}

export class PlaygroundDto {
  @IsString()
  @IsNotEmpty()
  model: string;

  @IsOptional()
  @IsString()
  system?: string;

  @IsArray()
  @ArrayNotEmpty()
  @ValidateNested({ each: true })
  @Type(() => PlaygroundMessageDto)
  messages: PlaygroundMessageDto[];

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000)
  max_tokens?: number;
}

/** Dashboard errors: `{ error: { code, message } }`, plus any details (e.g. retryAfterSeconds). */
export const dashboardError = (error: ApiError) => ({ error: { code: error.code, message: error.message }, ...error.details });

const DAY = /^\d{4}-\d{2}-\d{2}$/;
const DAY_MS = 86_400_000;

export interface DashboardSettings {
  signupEnabled: boolean;
}

/**
 * The dashboard's API, under /dashboard/api. Signed-in people only (a session cookie; never an
 * API key), each request confined to the organizations the user belongs to.
 */
@Controller('dashboard/api')
@UseFilters(new SurfaceErrorFilter(dashboardError))
export class DashboardController {
  private readonly emailThrottle = new SignInThrottle(3);
  private readonly addressThrottle = new SignInThrottle(20);
  /** Checked against when the email is unknown, so both cases take as long. */
  private readonly decoyHash = hashPassword('decoy password never used');

  constructor(
    private readonly identity: IdentityService,
    private readonly commands: CommandBus,
    private readonly catalogue: Catalogue,
    private readonly tokens: SessionTokens,
    @Inject(PROJECTIONS) private readonly projections: ProjectionStore,
    @Inject(CONFIG) private readonly config: Config,
    @Inject('DASHBOARD_SETTINGS') private readonly settings: DashboardSettings,
  ) {}

  // --- sessions ------------------------------------------------------------------------------

  private session(request: FastifyRequest): Session {
    const session = this.tokens.verify(parseCookies(request.headers.cookie ?? '')[SESSION_COOKIE]);
    if (!session) throw new ApiError('invalid_api_key', 'not signed in');
    return session;
  }

  /** A state-changing request: signed in, and carrying the session's CSRF token. */
  private changing(request: FastifyRequest): Session {
    const session = this.session(request);
    const given = Buffer.from(String(request.headers['x-csrf-token'] ?? ''));
    const expected = Buffer.from(session.csrf);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
      throw new ApiError('forbidden', 'missing or wrong x-csrf-token header');
    }
    return session;
  }

  private setCookie(request: FastifyRequest, reply: FastifyReply, token: string | null): void {
    const secure = request.protocol === 'https' || request.headers['x-forwarded-proto'] === 'https';
    void reply.header(
      'set-cookie',
      serializeCookie(SESSION_COOKIE, token ?? '', {
        httpOnly: true,
        sameSite: 'strict',
        secure,
        path: '/dashboard',
        maxAge: token ? SESSION_TTL_MS / 1000 : 0,
      }),
    );
  }

  /** The active organization, if the user (still) belongs to it. */
  private async activeOrg(session: Session): Promise<string> {
    const orgs = await this.projections.organizationsOf(session.userId);
    if (!session.activeOrgId || !orgs.some((o) => o.orgId === session.activeOrgId)) {
      throw new ApiError('not_found', 'no active organization: create one or pick one');
    }
    return session.activeOrgId;
  }

  private async sessionView(session: Session) {
    const organizations = (await this.projections.organizationsOf(session.userId)).sort((a, b) => a.createdAt - b.createdAt);
    const active = organizations.find((o) => o.orgId === session.activeOrgId) ?? null;
    let activeOrg = null;
    if (active) {
      const b = await this.projections.balance(active.orgId);
      activeOrg = {
        id: active.orgId,
        name: active.name,
        credits: {
          granted: creditsNumber(b.granted),
          spent: creditsNumber(b.spent),
          reserved: creditsNumber(b.reserved + b.pending),
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

  @Get('config')
  config_(@Req() request: FastifyRequest) {
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
    let user;
    try {
      user = await this.identity.registerUser(body.email, body.password);
    } catch (error) {
      if (error instanceof IdentityRuleError && error.code === 'user_exists')
        throw new ApiError('conflict', 'an account with this email exists: sign in');
      if (error instanceof IdentityRuleError) throw new ApiError('invalid_request', error.message);
      throw error;
    }
    const { token, session } = this.tokens.issue(user.userId, user.email, null);
    this.setCookie(request, reply, token);
    return { user: { id: user.userId, email: user.email }, csrf: session.csrf };
  }

  @Post('signin')
  @HttpCode(200)
  async signin(
    @Body(bodyValidation) body: CredentialsDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const emailKey = [`email:${normalizeEmail(body.email)}`];
    const addressKey = [`ip:${request.ip}`];
    const wait = Math.max(this.emailThrottle.waitFor(emailKey), this.addressThrottle.waitFor(addressKey));
    if (wait > 0) {
      const retryAfterSeconds = Math.ceil(wait / 1000);
      void reply.header('retry-after', String(retryAfterSeconds));
      throw new ApiError('rate_limited', `too many failed sign-ins: try again in ${retryAfterSeconds} s`, { retryAfterSeconds });
    }
    const { state: user } = await this.identity.user(body.email);
    const valid = await verifyPassword(body.password, user.exists ? user.passwordHash : await this.decoyHash);
    if (!user.exists || !valid) {
      this.emailThrottle.failed(emailKey);
      this.addressThrottle.failed(addressKey);
      throw new ApiError('invalid_api_key', 'wrong email or password');
    }
    this.emailThrottle.succeeded(emailKey);
    const orgs = await this.projections.organizationsOf(user.userId);
    const { token, session } = this.tokens.issue(user.userId, user.email, orgs[0]?.orgId ?? null);
    this.setCookie(request, reply, token);
    return { user: { id: user.userId, email: user.email }, csrf: session.csrf };
  }

  @Post('signout')
  @HttpCode(204)
  signout(@Req() request: FastifyRequest, @Res({ passthrough: true }) reply: FastifyReply): void {
    this.changing(request);
    this.setCookie(request, reply, null);
  }

  @Get('session')
  async current(@Req() request: FastifyRequest) {
    return this.sessionView(this.session(request));
  }

  // --- organizations -------------------------------------------------------------------------

  @Post('organizations')
  @HttpCode(201)
  async createOrganization(
    @Body(bodyValidation) body: NameDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const session = this.changing(request);
    const { orgId, name } = await this.identity.createOrganization(body.name);
    await this.identity.addMember(orgId, session.email, 'owner');
    await this.waitForProjection((orgs) => orgs.some((o) => o.orgId === orgId), session.userId);
    this.setCookie(request, reply, this.tokens.withActiveOrg(session, orgId));
    return { id: orgId, name };
  }

  @Post('organizations/active')
  @HttpCode(200)
  async switchOrganization(
    @Body(bodyValidation) body: ActiveOrgDto,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ) {
    const session = this.changing(request);
    const orgs = await this.projections.organizationsOf(session.userId);
    if (!orgs.some((o) => o.orgId === body.orgId)) throw new ApiError('not_found', 'no such organization');
    this.setCookie(request, reply, this.tokens.withActiveOrg(session, body.orgId));
    return this.sessionView({ ...session, activeOrgId: body.orgId });
  }

  /** Read-your-writes for the person who just changed something: wait for the projection. */
  private async waitForProjection(
    done: (orgs: Awaited<ReturnType<ProjectionStore['organizationsOf']>>) => boolean,
    userId: string,
  ) {
    const deadline = Date.now() + 5_000;
    while (!done(await this.projections.organizationsOf(userId))) {
      if (Date.now() > deadline) throw new ApiError('internal_error', 'the change is taking long to show: reload in a moment');
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  // --- keys ----------------------------------------------------------------------------------

  @Get('keys')
  async keys(@Req() request: FastifyRequest) {
    const orgId = await this.activeOrg(this.session(request));
    const keys = (await this.projections.keysOf(orgId)).sort((a, b) => b.createdAt - a.createdAt);
    return {
      data: keys.map((k) => ({
        id: k.keyId,
        name: k.name,
        prefix: k.prefix,
        createdAt: new Date(k.createdAt).toISOString(),
        lastUsedAt: k.lastUsedAt === null ? null : new Date(k.lastUsedAt).toISOString(),
        status: k.revokedAt === null ? 'active' : 'revoked',
      })),
    };
  }

  @Post('keys')
  @HttpCode(201)
  async createKey(@Body(bodyValidation) body: NameDto, @Req() request: FastifyRequest) {
    const orgId = await this.activeOrg(this.changing(request));
    const key = await this.identity.createApiKey(orgId, body.name);
    return { id: key.keyId, name: key.name, prefix: key.prefix, secret: key.secret, createdAt: new Date().toISOString() };
  }

  @Post('keys/:id/revoke')
  @HttpCode(200)
  async revokeKey(@Param('id') keyId: string, @Req() request: FastifyRequest) {
    const orgId = await this.activeOrg(this.changing(request));
    // Only keys of the active organization: another organization's key is "not found", never revoked.
    const key = (await this.projections.keysOf(orgId)).find((k) => k.keyId === keyId);
    if (!key) throw new ApiError('not_found', 'no such key in this organization');
    if (key.revokedAt !== null) return { id: keyId, status: 'revoked' };
    await this.identity.revokeApiKey(keyId);
    return { id: keyId, status: 'revoked' };
  }

  // --- usage ---------------------------------------------------------------------------------

  @Get('usage')
  async usage(@Req() request: FastifyRequest, @Query() query: Record<string, string | undefined>) {
    const orgId = await this.activeOrg(this.session(request));
    const page = Math.max(1, Number.parseInt(query.page ?? '1', 10) || 1);
    const pageSize = Math.min(200, Math.max(1, Number.parseInt(query.pageSize ?? '25', 10) || 25));
    for (const field of ['from', 'to'] as const) {
      if (query[field] && !DAY.test(query[field]!)) throw new ApiError('invalid_request', `${field} must be a date YYYY-MM-DD`);
    }
    const to = query.to ?? dayOf(Date.now());
    const from = query.from ?? dayOf(Date.parse(`${to}T00:00:00Z`) - 13 * DAY_MS);
    if (from > to) throw new ApiError('invalid_request', 'from must not be after to');
    if ((Date.parse(to) - Date.parse(from)) / DAY_MS > 366)
      throw new ApiError('invalid_request', 'the date range can span at most a year');

    const [log, keys, daily] = await Promise.all([
      this.projections.recentRequests(orgId, this.config.requestLogRetention),
      this.projections.keysOf(orgId),
      this.projections.dailySpend(orgId),
    ]);
    const keyNames = new Map(keys.map((k) => [k.keyId, k.name]));
    const inRange = (e: RequestLogEntry) => {
      const day = dayOf(e.time);
      return day >= from && day <= to;
    };
    const matching = log.filter(
      (e) => inRange(e) && (!query.keyId || e.keyId === query.keyId) && (!query.model || e.model === query.model),
    );
    const spendPerDay = [];
    for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`); t += DAY_MS) {
      const day = dayOf(t);
      spendPerDay.push({ day, cost: creditsNumber(daily.get(day) ?? 0), costNano: daily.get(day) ?? 0 });
    }
    const totalNano = matching.reduce((n, e) => n + e.cost, 0);
    return {
      data: matching.slice((page - 1) * pageSize, page * pageSize).map((e) => ({
        requestId: e.requestId,
        time: new Date(e.time).toISOString(),
        surface: e.surface,
        model: e.model,
        host: e.host,
        keyId: e.keyId,
        keyName: e.keyId === PLAYGROUND_KEY ? 'Playground' : (keyNames.get(e.keyId) ?? 'deleted key'),
        inputTokens: e.inputTokens,
        outputTokens: e.outputTokens,
        cost: creditsNumber(e.cost),
        costNano: e.cost,
        latencyMs: e.latencyMs,
        status: e.status,
      })),
      page,
      pageSize,
      total: matching.length,
      totals: { requests: matching.length, cost: creditsNumber(totalNano), costNano: totalNano },
      spendPerDay,
    };
  }

  @Get('models')
  models() {
    return { data: this.catalogue.servable().map((m) => ({ id: m.slug, name: m.name })) };
  }

  // --- playground ----------------------------------------------------------------------------

  @Post('playground')
  @HttpCode(200)
  async playground(
    @Body(bodyValidation) body: PlaygroundDto,
    @Req() request: FastifyRequest,
    @Res() reply: FastifyReply,
  ): Promise<void> {
    const orgId = await this.activeOrg(this.changing(request));
    const result = await this.commands.execute(
      new InferenceCommand({
        surface: 'playground',
        apiKey: null,
        principal: { orgId, keyId: PLAYGROUND_KEY },
        model: body.model,
        request: {
          system: body.system?.trim() ? [body.system] : [],
          messages: body.messages.map((m) =>
            m.role === 'user' ? { role: 'user', content: m.content } : { role: 'assistant', content: m.content, toolCalls: [] },
          ),
          tools: [],
          maxTokens: body.max_tokens,
          stop: [],
          // The playground always streams, in the native route's events.
          stream: true,
        },
        requestId: request.id,
      }),
    );
    return respond(reply, result, { ...nativeWire, error: dashboardError }, this.config.sseKeepAliveMs);
  }
}
