import { Module } from '@nestjs/common';
import { ReadPosition } from './read-position';

/** `min_position` for the read routes (see ledger-position.ts). */
@Module({ providers: [ReadPosition], exports: [ReadPosition] })
export class ReadYourWritesModule {}
