import { IsIn, IsNotEmpty, IsOptional, IsString, MaxLength } from 'class-validator';

export class KeyNameDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  name: string;
}

/** A key's credit limit: an amount of credits (decimal text), or null for none; and when it starts afresh. */
export class KeyLimitDto {
  @IsOptional()
  @IsString()
  @MaxLength(40)
  limit: string | null;

  @IsIn(['never', 'daily', 'weekly', 'monthly'])
  reset: 'never' | 'daily' | 'weekly' | 'monthly';
}
