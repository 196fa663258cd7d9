import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../http/api-error';
import { bearerKey } from '../http/credentials';
import type { KeyRecord } from '../projections/read-model';
import { IdentityService } from '../identity/identity.service';

export type KeyedRequest = FastifyRequest & { apiKey: KeyRecord };

/** `Authorization: Bearer sk-svc-…`: the key must exist and not be revoked. */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly identity: IdentityService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<KeyedRequest>();
    const secret = bearerKey(request);
    if (!secret) throw new ApiError('invalid_api_key', 'missing API key: send "Authorization: Bearer <key>"');
    const key = await this.identity.authenticate(secret);
    if (!key) throw new ApiError('invalid_api_key', 'invalid or revoked API key');
    request.apiKey = key;
    return true;
  }
}
