import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayNotEmpty,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  Max,
  Min,
  ValidateNested,
  ValidationArguments,
  registerDecorator,
} from 'class-validator';

/** Message content: a string, or an array of content parts each with a string `type` (text parts with `text`). */
function IsMessageContent() {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isMessageContent',
      target: object.constructor,
      propertyName,
      validator: {
        validate(value: unknown) {
          if (value === null || typeof value === 'string') return true;
          if (!Array.isArray(value)) return false;
          return value.every(
            (part) =>
              typeof part === 'object' &&
              part !== null &&
              typeof (part as { type?: unknown }).type === 'string' &&
              ((part as { type: string }).type !== 'text' || typeof (part as { text?: unknown }).text === 'string'),
          );
        },
        defaultMessage: (args: ValidationArguments) =>
          `${args.property} must be a string or an array of content parts ({"type": "text", "text": "…"})`,
      },
    });
}

/** `stop`: a string or up to four strings. */
function IsStop() {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isStop',
      target: object.constructor,
      propertyName,
      validator: {
        validate: (value: unknown) =>
          value === null || typeof value === 'string' || (Array.isArray(value) && value.length <= 4 && value.every((s) => typeof s === 'string')),
        defaultMessage: () => 'stop must be a string or an array of at most 4 strings',
      },
    });
}

/** `tool_choice`: "auto" | "none" | "required" | {"type": "function", "function": {"name": …}}. */
function IsToolChoice() {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isToolChoice',
      target: object.constructor,
      propertyName,
      validator: {
        validate: (value: unknown) =>
          value === 'auto' ||
          value === 'none' ||
          value === 'required' ||
          (typeof value === 'object' &&
            value !== null &&
            (value as { type?: unknown }).type === 'function' &&
            typeof (value as { function?: { name?: unknown } }).function?.name === 'string'),
        defaultMessage: () => 'tool_choice must be "auto", "none", "required" or {"type": "function", "function": {"name": "…"}}',
      },
    });
}

export class FunctionCallDto {
  @IsString()
  name: string;

  @IsString()
  arguments: string;
}

export class ToolCallDto {
  @IsString()
  id: string;

  @IsIn(['function'])
  type: 'function';

  @ValidateNested()
  @Type(() => FunctionCallDto)
  function: FunctionCallDto;
}

export class ChatMessageDto {
  @IsIn(['system', 'developer', 'user', 'assistant', 'tool'])
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';

  @IsOptional()
  @IsMessageContent()
  content?: string | Array<{ type: string; text?: string }> | null;

  @IsOptional()
  @IsString()
  name?: string;

  @IsOptional()
  @IsArray()
  @ValidateNested({ each: true })
  @Type(() => ToolCallDto)
  tool_calls?: ToolCallDto[];

  @IsOptional()
  @IsString()
  tool_call_id?: string;
}

export class FunctionDefinitionDto {
  @IsString()
  @IsNotEmpty()
  name: string;

  @IsOptional()
  @IsString()
  description?: string;

  @IsOptional()
  @IsObject()
  parameters?: Record<string, unknown>;
}

export class ToolDto {
  @IsIn(['function'])
  type: 'function';

  @ValidateNested()
  @Type(() => FunctionDefinitionDto)
  function: FunctionDefinitionDto;
}

export class StreamOptionsDto {
  @IsOptional()
  @IsBoolean()
  include_usage?: boolean;
}

/**
 * POST /chat/completions. Fields the gateway does not use (`n`, `logprobs`, `response_format`,
 * `seed`, `user`, …) are accepted when well-typed and ignored; unknown fields are ignored.
 */
export class ChatCompletionRequestDto {
  @IsString()
  @IsNotEmpty()
  model: string;

  @IsArray()
  @ArrayNotEmpty()
  @ValidateNested({ each: true })
  @Type(() => ChatMessageDto)
  messages: ChatMessageDto[];

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(128)
  @ValidateNested({ each: true })
  @Type(() => ToolDto)
  tools?: ToolDto[];

  @IsOptional()
  @IsToolChoice()
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } };

  @IsOptional()
  @IsInt()
  @Min(1)
  max_tokens?: number;

  @IsOptional()
  @IsInt()
  @Min(1)
  max_completion_tokens?: number;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(2)
  temperature?: number;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  top_p?: number;

  @IsOptional()
  @IsStop()
  stop?: string | string[] | null;

  @IsOptional()
  @IsBoolean()
  stream?: boolean;

  @IsOptional()
  @ValidateNested()
  @Type(() => StreamOptionsDto)
  stream_options?: StreamOptionsDto;

  @IsOptional()
  @IsInt()
  @Min(1)
  n?: number;

  @IsOptional()
  @IsBoolean()
  logprobs?: boolean;

  @IsOptional()
  @IsObject()
  response_format?: Record<string, unknown>;
}
