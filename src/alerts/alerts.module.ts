import { Module } from '@nestjs/common';
import { AlertsController } from './alerts.controller';
import { AlertsService } from './alerts.service';

/**
 * Alerts: their settings' commands (AlertsService, which the dashboard imports for its routes) and the
 * management API's routes. Their delivery runs beside the application (see delivery.ts, started by createApp).
 */
@Module({
  controllers: [AlertsController],
  providers: [AlertsService],
  exports: [AlertsService],
})
export class AlertsModule {}
