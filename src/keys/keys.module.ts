import { Module } from '@nestjs/common';
import { ReadYourWritesModule } from '../read-your-writes/read-your-writes.module';
import { CreateKeyHandler } from './create/create-key.handler';
import { KeyController } from './key.controller';
import { ListKeysHandler } from './list/list-keys.handler';
import { ManagementController } from './management.controller';
import { ReadKeyHandler } from './read/read-key.handler';
import { RevokeKeyHandler } from './revoke/revoke-key.handler';
import { UpdateKeyHandler } from './update/update-key.handler';

const handlers = [CreateKeyHandler, UpdateKeyHandler, RevokeKeyHandler, ListKeysHandler, ReadKeyHandler];

/**
 * Keys: the use cases' handlers (create, update, revoke — whose rules are the key decider's — list
 * and read), and the API's front doors to them: a key's own reads (GET /api/v1/key, GET
 * /api/v1/generation) and the management API (/api/v1/keys, with a management key). The handlers
 * are plain injectables, so that the operator tool, which has no Nest application, calls them too;
 * the dashboard imports this module for its key routes. Needs the runtime's services (a global module).
 */
@Module({
  imports: [ReadYourWritesModule],
  controllers: [KeyController, ManagementController],
  providers: handlers,
  exports: handlers,
})
export class KeysModule {}
