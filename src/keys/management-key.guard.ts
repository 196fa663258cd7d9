import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { ApiError } from '../http/api-error';
import { invalidApiKey, requireKey } from '../http/credentials';
import { IdentityService } from '../identity/identity.service';
import type { KeyedRequest } from '../surfaces/api-key.guard';

/** The management API's rule: `Authorization: Bearer` with an active management key (an ordinary key is a 403). */
@Injectable()
export class ManagementKeyGuard implements CanActivate {
  constructor(private readonly identity: IdentityService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<KeyedRequest>();
    const key = await this.identity.authenticate(requireKey(request));
    if (!key) throw invalidApiKey();
    if (key.kind !== 'management') {
      throw new ApiError(
        'forbidden',
        'the management API needs a management key (made in the dashboard, or with the operator tool: keys create --management)',
      );
    }
    request.apiKey = key;
    return true;
  }
}
