import { Controller, DynamicModule, Get, Module } from '@nestjs/common';
import { CqrsModule } from '@nestjs/cqrs';
import { CreditsModule } from './credits/credits.module';
import type { Runtime } from './runtime/runtime';
import { RuntimeModule } from './runtime/runtime.module';

@Controller()
class HealthController {
  @Get('health')
  health() {
    return { status: 'ok' };
  }
}

@Module({})
export class AppModule {
  static forRuntime(runtime: Runtime): DynamicModule {
    return {
      module: AppModule,
      imports: [RuntimeModule.forRuntime(runtime), CqrsModule.forRoot(), CreditsModule],
      controllers: [HealthController],
    };
  }
}
