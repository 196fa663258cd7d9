import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiError, replyWithError } from '../http/api-error';
import { IdentityRuleError } from '../identity/identity.decider';
import { maskSecrets } from '../key-secret/key-secret';

/** Dashboard errors: `{ error: { code, message } }`, plus any details (e.g. retryAfterSeconds). */
export const dashboardError = (error: ApiError) => ({ error: { code: error.code, message: error.message }, ...error.details });

/** What a person sees of a rule of identity their input broke (a blank name, a duplicate): never a 500. */
function identityRefusal(error: IdentityRuleError): ApiError {
  const code = error.code.endsWith('_not_found') ? 'not_found' : error.code.endsWith('_exists') ? 'conflict' : 'invalid_request';
  return new ApiError(code, maskSecrets(error.message));
}

/** The filter every dashboard controller answers its failures with. */
@Catch()
class DashboardErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const error = exception instanceof IdentityRuleError ? identityRefusal(exception) : exception;
    replyWithError(host.switchToHttp().getResponse<FastifyReply>(), error, dashboardError);
  }
}

export const dashboardErrors = new DashboardErrorFilter();
