import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

export class KeyNameDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  name: string;
}
