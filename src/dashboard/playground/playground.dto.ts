import { Type } from 'class-transformer';
import {
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';

export class PlaygroundMessageDto {
  @IsIn(['user', 'assistant'])
  role: 'user' | 'assistant';

  @IsString()
  @IsNotEmpty()
  content: string;
}

/** A conversation with one model: an optional system prompt, the turns so far, an optional output cap. */
export class PlaygroundDto {
  @IsString()
  @IsNotEmpty()
  model: string;

  @IsOptional()
  @IsString()
  system?: string;

  @IsArray()
  @ArrayNotEmpty()
  @IsObject({ each: true })
  @ValidateNested({ each: true })
  @Type(() => PlaygroundMessageDto)
  messages: PlaygroundMessageDto[];

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(100_000)
  max_tokens?: number;
}
