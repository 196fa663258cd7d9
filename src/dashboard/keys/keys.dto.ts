import { IsBoolean, IsIn, IsInt, IsISO8601, IsNotEmpty, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';

export class CreateKeyDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  name: string;

  /** A management key (owners only): it manages the organization's keys through /api/v1/keys and cannot call models. */
  @IsOptional()
  @IsBoolean()
  management?: boolean;

  /** Billing rights: refused (403), the operator gives them (keys create --management --billing); kept to say so. */
  @IsOptional()
  @IsBoolean()
  billing?: boolean;
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

/** A key's own rate limits (null or absent: none of that kind; both none: the organization's default applies). */
export class KeyRateLimitsDto {
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000_000_000)
  requestsPerMinute?: number | null;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1_000_000_000_000)
  tokensPerMinute?: number | null;
}

/** When a key stops working: an ISO 8601 time in the future, or null for never. */
export class KeyExpiryDto {
  @IsOptional()
  @IsISO8601({ strict: true })
  expiresAt: string | null;
}
