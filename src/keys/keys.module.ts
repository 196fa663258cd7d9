import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { CreateKeyHandler } from './create/create-key.command';
import { KeyController } from './key.controller';
import { ListKeysHandler } from './list/list-keys.query';
import { ManagementController } from './management.controller';
import { ReadKeyHandler } from './read/read-key.query';
import { RevokeKeyHandler } from './revoke/revoke-key.command';
import { UpdateKeyHandler } from './update/update-key.command';

/**
 * Keys: the use cases (create, update, revoke — whose rules are the key decider's — and list and
 * read), and the API's front doors to them: a key's own reads (GET /api/v1/key, GET
 * /api/v1/generation) and the management API (/api/v1/keys, with a management key). The
 * dashboard's key routes dispatch the same commands. Needs the runtime's services (a global module).
 */
@Module({
  imports: [CqrsModule],
  controllers: [KeyController, ManagementController],
  providers: [CreateKeyHandler, UpdateKeyHandler, RevokeKeyHandler, ListKeysHandler, ReadKeyHandler],
})
export class KeysModule {}
