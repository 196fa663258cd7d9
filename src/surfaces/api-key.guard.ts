import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { ordinaryKey, requireKey } from '../http/credentials';
import { IdentityService } from '../identity/identity.service';
import type { KeyRecord } from '../identity/key-lookup';

export type KeyedRequest = FastifyRequest & { apiKey: KeyRecord };

/**
 * For routes that only read (the model list, credits): `Authorization: Bearer sk-svc-…` must be a
 * key that exists and is not revoked. Inference routes authenticate in the inference command.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly identity: IdentityService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<KeyedRequest>();
    request.apiKey = ordinaryKey(await this.identity.authenticate(requireKey(request)));
    return true;
  }
}

/** A missing key is a 401 before the body is looked at (whether it is valid is the inference command's to say). */
@Injectable()
export class BearerPresentGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    requireKey(context.switchToHttp().getRequest<FastifyRequest>());
    return true;
  }
}
