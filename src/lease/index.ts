/** Redis leases: one holder at a time for a named thing. Imports nothing of salesync but src/core. */
export { acquireLease, tryAcquireLease, leaseHolder, defaultHolder } from './lease.js';
export type { Lease, LeaseOptions, AcquireLeaseOptions } from './lease.js';
export { RELEASE_LEASE, RENEW_LEASE } from './scripts.js';
export { resourceLeaseKey, warehouseId, warehouseLeaseKey } from './keys.js';
