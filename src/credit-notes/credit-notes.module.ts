import { Module } from '@nestjs/common';
import { CreditNotesController } from './credit-notes.controller';

/** Credit notes in the management API (POST /api/v1/credit-notes); needs the runtime's services (a global module). */
@Module({ controllers: [CreditNotesController] })
export class CreditNotesModule {}
