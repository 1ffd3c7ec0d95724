/**
 * The lease's atomic Redis operations. Each is one script so that "is it still mine?" and the change happen
 * together: a holder whose lease lapsed and was taken by another can never renew or delete the new one.
 */

/**
 * Renew: extend the lease only while it still holds our token.
 * KEYS[1] the lease key
 * ARGV[1] the holder's token
 * ARGV[2] time to live in milliseconds
 * Returns 1 when renewed, 0 when the lease is no longer ours.
 */
export const RENEW_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
`;

/**
 * Release: delete the lease only while it still holds our token (compare-and-delete).
 * KEYS[1] the lease key
 * ARGV[1] the holder's token
 * Returns 1 when released, 0 when it was no longer ours.
 */
export const RELEASE_LEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`;
