import { IsBoolean, IsEmail, IsIn, IsOptional, MaxLength } from 'class-validator';

export class AddMemberDto {
  @IsEmail()
  @MaxLength(254)
  email: string;

  @IsOptional()
  @IsIn(['owner', 'member'])
  role?: 'owner' | 'member';

  /** A member who may create, change and revoke keys (owners always may). */
  @IsOptional()
  @IsBoolean()
  manageKeys?: boolean;
}

export class KeyAccessDto {
  @IsBoolean()
  manageKeys: boolean;
}
