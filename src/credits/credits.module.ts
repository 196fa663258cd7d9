import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { CreditsController } from './credits.controller';
import { GetCreditsHandler } from './get-credits.query';

@Module({
  imports: [CqrsModule],
  controllers: [CreditsController],
  providers: [GetCreditsHandler],
})
export class CreditsModule {}
