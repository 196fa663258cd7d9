import { ValidationError, ValidationPipe } from '@nestjs/common';
import { ApiError } from './api-error';

export function validationMessages(errors: ValidationError[], path = ''): string[] {
  return errors.flatMap((e) => {
    const at = path ? `${path}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {}).map((m) => (m.startsWith(e.property) ? `${path ? `${path}.` : ''}${m}` : `${at}: ${m}`));
    return [...own, ...validationMessages(e.children ?? [], at)];
  });
}

/**
 * Request bodies checked against their DTO: wrong types are a 400 naming the field; unknown
 * fields are dropped, not refused.
 */
export const bodyValidation = new ValidationPipe({
  transform: true,
  whitelist: true,
  forbidNonWhitelisted: false,
  exceptionFactory: (errors) => new ApiError('invalid_request', validationMessages(errors).slice(0, 5).join('; ') || 'invalid request body'),
});
