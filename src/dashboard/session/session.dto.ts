import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

/** Sign-up and sign-in. */
export class CredentialsDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(254)
  email: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(1024)
  password: string;
}

/** A new password, given with the current one. */
export class PasswordChangeDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(1024)
  currentPassword: string;

  @IsString()
  @IsNotEmpty()
  @MaxLength(1024)
  newPassword: string;
}
