import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { type KeyHeaders, ordinaryKey, requireKey } from '../http/credentials';
import { IdentityService } from '../identity/identity.service';
import type { KeyRecord } from '../identity/key-lookup';

export type KeyedRequest = FastifyRequest & { apiKey: KeyRecord };

/**
 * For routes that only read (the model list, credits): `Authorization: Bearer sk-svc-…` must be a
 * key that exists and is not revoked. Inference routes authenticate in the inference command.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  /** Where the key is read from. */
  protected readonly headers: KeyHeaders = 'bearer';

  constructor(private readonly identity: IdentityService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<KeyedRequest>();
    request.apiKey = ordinaryKey(await this.identity.authenticate(requireKey(request, this.headers)));
    return true;
  }
}

/** ApiKeyGuard, the key taken from `x-api-key` as well: the model list, which Anthropic's SDKs call so. */
@Injectable()
export class AnyKeyHeaderGuard extends ApiKeyGuard {
  protected override readonly headers: KeyHeaders = 'x-api-key or bearer';
}

/**
 * A body's checks (`read`), run after the key's presence is: when they fail, the key is looked up
 * first, and a key that is not an ordinary one answers for itself (401, or 403 for a management
 * key), as the providers' APIs answer a wrong key before a bad body. A body that passes costs no
 * look-up here: the inference command authenticates the key.
 */
export async function bodyReadAfterKey<T>(identity: IdentityService, secret: string, read: () => T): Promise<T> {
  try {
    return read();
  } catch (error) {
    ordinaryKey(await identity.authenticate(secret));
    throw error;
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
