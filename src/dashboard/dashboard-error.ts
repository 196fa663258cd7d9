import { ArgumentsHost, Catch, ExceptionFilter } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiError, replyWithError } from '../http/api-error';

/** Dashboard errors: `{ error: { code, message } }`, plus any details (e.g. retryAfterSeconds). */
export const dashboardError = (error: ApiError) => ({ error: { code: error.code, message: error.message }, ...error.details });

/** The filter every dashboard controller answers its failures with. */
@Catch()
class DashboardErrorFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    // A rule of identity the input broke is a 4xx (toApiError says which).
    replyWithError(host.switchToHttp().getResponse<FastifyReply>(), exception, dashboardError);
  }
}

export const dashboardErrors = new DashboardErrorFilter();
