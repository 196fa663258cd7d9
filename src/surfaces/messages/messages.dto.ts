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
  registerDecorator,
} from 'class-validator';

export interface TextBlock {
  type: 'text';
  text: string;
}
export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}
export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content?: string | Array<{ type: string; text?: string }>;
  is_error?: boolean;
}
/** Other block types (image, document, thinking, …) are accepted and dropped. */
export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | { type: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function blockProblem(block: unknown): string | null {
  if (!isObject(block) || typeof block.type !== 'string') return 'each content block needs a string "type"';
  switch (block.type) {
    case 'text':
      return typeof block.text === 'string' ? null : 'a text block needs "text"';
    case 'tool_use':
      return typeof block.id === 'string' && typeof block.name === 'string' && isObject(block.input)
        ? null
        : 'a tool_use block needs "id", "name" and an object "input"';
    case 'tool_result':
      return typeof block.tool_use_id === 'string' &&
        (block.content === undefined || typeof block.content === 'string' || Array.isArray(block.content))
        ? null
        : 'a tool_result block needs "tool_use_id" and string or block "content"';
    default:
      return null;
  }
}

/** A string, or an array of content blocks. */
function IsContent() {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isContent',
      target: object.constructor,
      propertyName,
      validator: {
        validate: (value: unknown) => typeof value === 'string' || (Array.isArray(value) && value.every((b) => blockProblem(b) === null)),
        defaultMessage: (args) => {
          const value = args?.value as unknown;
          const problem = Array.isArray(value) ? value.map(blockProblem).find(Boolean) : null;
          return `${args?.property ?? 'content'} must be a string or an array of content blocks${problem ? `: ${problem}` : ''}`;
        },
      },
    });
}

/** `system`: a string or an array of text blocks. */
function IsSystem() {
  return (object: object, propertyName: string) =>
    registerDecorator({
      name: 'isSystem',
      target: object.constructor,
      propertyName,
      validator: {
        validate: (value: unknown) =>
          typeof value === 'string' || (Array.isArray(value) && value.every((b) => isObject(b) && b.type === 'text' && typeof b.text === 'string')),
        defaultMessage: () => 'system must be a string or an array of text blocks',
      },
    });
}

export class MessageDto {
  @IsIn(['user', 'assistant'])
  role: 'user' | 'assistant';

  @IsContent()
  content: string | ContentBlock[];
}

export class ToolDefinitionDto {
  @IsString()
  @IsNotEmpty()
  name: string;

  @IsOptional()
  @IsString()
  description?: string;

  @IsObject()
  input_schema: Record<string, unknown>;
}

export class ToolChoiceDto {
  @IsIn(['auto', 'any', 'tool', 'none'])
  type: 'auto' | 'any' | 'tool' | 'none';

  @IsOptional()
  @IsString()
  name?: string;
}

/** POST /messages, the messages wire format. Unknown fields are ignored. */
export class MessagesRequestDto {
  @IsString()
  @IsNotEmpty()
  model: string;

  @IsInt()
  @Min(1)
  max_tokens: number;

  @IsArray()
  @ArrayNotEmpty()
  @ValidateNested({ each: true })
  @Type(() => MessageDto)
  messages: MessageDto[];

  @IsOptional()
  @IsSystem()
  system?: string | TextBlock[];

  @IsOptional()
  @IsArray()
  @ArrayMaxSize(128)
  @ValidateNested({ each: true })
  @Type(() => ToolDefinitionDto)
  tools?: ToolDefinitionDto[];

  @IsOptional()
  @ValidateNested()
  @Type(() => ToolChoiceDto)
  tool_choice?: ToolChoiceDto;

  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  stop_sequences?: string[];

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  temperature?: number;

  @IsOptional()
  @IsNumber()
  @Min(0)
  @Max(1)
  top_p?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  top_k?: number;

  @IsOptional()
  @IsObject()
  metadata?: Record<string, unknown>;

  @IsOptional()
  @IsBoolean()
  stream?: boolean;
}
