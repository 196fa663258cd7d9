import { ApiError, SurfaceErrorFilter } from '../http/api-error';

/** Dashboard errors: `{ error: { code, message } }`, plus any details (e.g. retryAfterSeconds). */
export const dashboardError = (error: ApiError) => ({ error: { code: error.code, message: error.message }, ...error.details });

/** The filter every dashboard controller answers its failures with. */
export const dashboardErrors = new SurfaceErrorFilter(dashboardError);
