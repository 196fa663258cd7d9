import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { ReadYourWritesModule } from '../read-your-writes/read-your-writes.module';
import { CreditsController } from './credits.controller';
import { GetCreditsHandler } from './get-credits.query';

@Module({
  imports: [CqrsModule, ReadYourWritesModule],
  controllers: [CreditsController],
  providers: [GetCreditsHandler],
})
export class CreditsModule {}
