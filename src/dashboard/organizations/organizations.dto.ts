import { IsNotEmpty, IsString, MaxLength } from 'class-validator';

export class OrganizationNameDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  name: string;
}

export class ActiveOrgDto {
  @IsString()
  @IsNotEmpty()
  orgId: string;
}
