import { Module } from '@nestjs/common';
import { UsageExportController } from './usage-export.controller';
import { UsageExport } from './usage-export';

/** The usage export in the FOCUS columns: the management API's route here, the dashboard's download in the dashboard (it imports this). */
@Module({ controllers: [UsageExportController], providers: [UsageExport], exports: [UsageExport] })
export class UsageExportModule {}
