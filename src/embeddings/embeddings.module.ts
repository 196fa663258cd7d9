import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { InferenceModule } from '../inference/inference.module';
import { EmbeddingsHandler } from './embeddings.handler';

/**
 * The embeddings use case: its command handler, calling hosts through the inference module's
 * transport. Needs the runtime's services and the catalogue (global modules).
 */
@Module({
  imports: [CqrsModule, InferenceModule],
  providers: [EmbeddingsHandler],
})
export class EmbeddingsModule {}
