import type { SalesApi } from '../../src/api/types.js';

/** A SalesApi that delegates to `api` except for the methods given: to script events mid-walk. */
export function wrapApi(api: SalesApi, overrides: Partial<SalesApi>): SalesApi {
  return {
    keyFingerprint: api.keyFingerprint,
    keyFingerprints: api.keyFingerprints,
    listPages: api.listPages.bind(api),
    listPage: api.listPage.bind(api),
    getRecord: api.getRecord.bind(api),
    getMeetingLog: api.getMeetingLog.bind(api),
    listProperties: api.listProperties.bind(api),
    search: api.search.bind(api),
    listUserPages: api.listUserPages.bind(api),
    getUser: api.getUser.bind(api),
    stats: api.stats.bind(api),
    ...overrides,
  };
}
