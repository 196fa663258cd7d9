import { Module } from '@nestjs/common';
import { KeyController } from './key.controller';
import { ManagementController } from './management.controller';

/**
 * A key's own reads (GET /api/v1/key, GET /api/v1/generation) and the management API
 * (/api/v1/keys, with a management key).
 */
@Module({ controllers: [KeyController, ManagementController] })
export class KeysModule {}
