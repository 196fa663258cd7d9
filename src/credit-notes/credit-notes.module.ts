import { Module } from '@nestjs/common';
import { CreditNotesController } from './credit-notes.controller';
import { IssueCreditNoteHandler } from './issue-credit-note.handler';

/** Credit notes in the management API (POST /api/v1/credit-notes), and their handler for the dashboard; needs the runtime's services (a global module). */
@Module({ controllers: [CreditNotesController], providers: [IssueCreditNoteHandler], exports: [IssueCreditNoteHandler] })
export class CreditNotesModule {}
