import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { EmbeddingsModule } from '../embeddings/embeddings.module';
import { InferenceModule } from '../inference/inference.module';
import { EmbeddingsController } from './embeddings/embeddings.controller';
import { ChatCompletionsRoute } from './chat-completions/chat-completions.controller';
import { GeminiController } from './gemini/gemini.controller';
import { MessagesController } from './messages/messages.controller';
import { ModelsController } from './models/models.controller';
import { NativeController } from './native/native.controller';
import { ResponsesController } from './responses/responses.controller';

/** The API surfaces: translators between their wire formats and the one inference command. */
@Module({
  imports: [CqrsModule, InferenceModule, EmbeddingsModule],
  controllers: [
    EmbeddingsController,
    MessagesController,
    ResponsesController,
    GeminiController,
    ModelsController,
    NativeController,
  ],
  // Hot routes Fastify serves directly (each registers itself when the module starts).
  providers: [ChatCompletionsRoute],
})
export class SurfacesModule {}
