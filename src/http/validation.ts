import { ValidationError, ValidationPipe } from '@nestjs/common';
import { ApiError } from './api-error';

function validationMessages(errors: ValidationError[], path = ''): string[] {
  return errors.flatMap((e) => {
    const at = path ? `${path}.${e.property}` : e.property;
    const own = Object.values(e.constraints ?? {}).map((m) =>
      m.startsWith(e.property) ? `${path ? `${path}.` : ''}${m}` : `${at}: ${m}`,
    );
    return [...own, ...validationMessages(e.children ?? [], at)];
  });
}

/**
 * The dashboard's form bodies checked against their DTO: wrong types are a 400 naming the field;
 * unknown fields are dropped, not refused. (The API surfaces use compiled JSON Schemas instead:
 * see schema-validation.ts.)
 */
export const bodyValidation = new ValidationPipe({
  transform: true,
  whitelist: true,
  forbidNonWhitelisted: false,
  exceptionFactory: (errors) =>
    new ApiError('invalid_request', validationMessages(errors).slice(0, 5).join('; ') || 'invalid request body'),
});
