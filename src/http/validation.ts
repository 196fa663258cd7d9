import { ArgumentMetadata, ValidationError, ValidationPipe } from '@nestjs/common';
import { wellFormed } from '../identity/checks';
import { maskSecrets } from '../key-secret/key-secret';
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

/** Where in a parsed body a text (a value or a field's name) is not well-formed, as `messages.0.content`; else null. */
export function illFormedTextAt(value: unknown, path = ''): string | null {
  if (typeof value === 'string') return wellFormed(value) ? null : path || 'the body';
  if (typeof value !== 'object' || value === null) return null;
  for (const [field, inner] of Object.entries(value)) {
    const at = path ? `${path}.${field}` : field;
    if (!wellFormed(field)) return at;
    const found = illFormedTextAt(inner, at);
    if (found !== null) return found;
  }
  return null;
}

/**
 * The dashboard's form bodies checked against their DTO: text that is not well-formed Unicode (a
 * lone surrogate, which some validators throw on) and wrong types are a 400 naming the field;
 * unknown fields are dropped, not refused. (The API surfaces use compiled JSON Schemas instead:
 * see schema-validation.ts.)
 */
class DashboardBodyValidation extends ValidationPipe {
  override async transform(value: unknown, metadata: ArgumentMetadata): Promise<unknown> {
    const illFormed = illFormedTextAt(value);
    if (illFormed !== null) {
      // A field's name is the client's text: bounded and masked like any echo.
      const field = maskSecrets(illFormed.slice(0, 100));
      throw new ApiError('invalid_request', `${field} must be well-formed text (no lone surrogates)`);
    }
    return super.transform(value, metadata);
  }
}

export const bodyValidation = new DashboardBodyValidation({
  transform: true,
  whitelist: true,
  forbidNonWhitelisted: false,
  exceptionFactory: (errors) =>
    new ApiError('invalid_request', validationMessages(errors).slice(0, 5).join('; ') || 'invalid request body'),
});
