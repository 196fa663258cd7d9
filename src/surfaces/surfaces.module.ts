import { Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { InferenceModule } from '../inference/inference.module';
import { ChatCompletionsController } from './chat-completions/chat-completions.controller';
import { MessagesController } from './messages/messages.controller';
import { ModelsController } from './models/models.controller';
import { NativeController } from './native/native.controller';
import { ResponsesController } from './responses/responses.controller';

/** The API surfaces: translators between their wire formats and the one inference command. */
@Module({
  imports: [CqrsModule, InferenceModule],
  controllers: [ChatCompletionsController, MessagesController, ResponsesController, ModelsController, NativeController],
})
export class SurfacesModule {}
