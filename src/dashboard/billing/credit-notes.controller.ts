import { Controller, HttpCode, Post, UseFilters } from '@nestjs/common';
import { ApiError } from '../../http/api-error';
import { dashboardErrors } from '../dashboard-error';
import { SignedIn } from '../session/session.guard';

/** What the dashboard answers whoever asks it for a credit note. */
export const CREDIT_NOTES_OPERATOR_ONLY =
  "credit notes (refunds and adjustments) are issued by the gateway's operator, not from the dashboard: model-gateway credits refund / credits adjust";

/**
 * Credit notes are not issued from the dashboard: anyone may sign up and own an organization, and
 * a customer crediting their own balance would mint credits. The route stays to say so (403, before
 * any body is read); owners see the notes the operator issued on the usage and billing pages.
 */
@Controller('dashboard/api/credit-notes')
@UseFilters(dashboardErrors)
@SignedIn({ activeOrg: true })
export class CreditNotesController {
  @Post()
  @HttpCode(403)
  refuse(): never {
    throw new ApiError('forbidden', CREDIT_NOTES_OPERATOR_ONLY);
  }
}
