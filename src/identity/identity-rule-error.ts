/** A rule of identity (organizations, members, users, keys) that a command broke: the caller's to fix, never a 500. */
export class IdentityRuleError extends Error {
  constructor(
    readonly code:
      | 'invalid_name'
      | 'invalid_email'
      | 'invalid_password'
      | 'organization_exists'
      | 'organization_not_found'
      | 'user_exists'
      | 'user_not_found'
      | 'already_member'
      | 'not_member'
      | 'not_owner'
      | 'last_owner'
      | 'not_key_manager'
      | 'key_exists'
      | 'key_not_found'
      | 'key_revoked'
      | 'key_expired'
      | 'invalid_rate_limits'
      | 'invalid_expiry'
      | 'invalid_limit'
      | 'invalid_key_rights'
      | 'no_change',
    message: string,
  ) {
    super(message);
    this.name = 'IdentityRuleError';
  }
}
