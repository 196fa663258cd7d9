import { ValidationPipe } from '@nestjs/common';
import { ApiError } from '../../http/api-error';
import { validationMessages } from '../../http/validation';

/** Stricter than the compatible surfaces: anything in a message besides role and content is a 400. */
export const nativeBodyValidation = new ValidationPipe({
  transform: true,
  whitelist: true,
  forbidNonWhitelisted: true,
  exceptionFactory: (errors) => new ApiError('invalid_request', validationMessages(errors).slice(0, 5).join('; ') || 'invalid request body'),
});
