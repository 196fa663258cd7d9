import { DynamicModule, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { Catalogue } from '../catalogue/catalogue';
import { HostTransport } from '../hosts/transport';
import { InferenceHandler } from '../inference/inference.handler';
import { ChatCompletionsController } from './chat-completions/chat-completions.controller';
import { MessagesController } from './messages/messages.controller';
import { ModelsController } from './models/models.controller';
import { NativeController } from './native/native.controller';

/** The API surfaces and the one pipeline they share. */
@Module({})
export class SurfacesModule {
  static forCatalogue(catalogue: Catalogue, transport: HostTransport): DynamicModule {
    return {
      module: SurfacesModule,
      imports: [CqrsModule],
      controllers: [ChatCompletionsController, MessagesController, ModelsController, NativeController],
      providers: [{ provide: Catalogue, useValue: catalogue }, { provide: HostTransport, useValue: transport }, InferenceHandler],
    };
  }
}
