import { Module } from '@nestjs/common';
import { LedgerExportController } from './ledger-export.controller';

/** The ledger's export and chain head on the management API. Needs the runtime's services (a global module). */
@Module({ controllers: [LedgerExportController] })
export class LedgerExportModule {}
