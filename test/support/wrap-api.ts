import type { ListOptions, SalesApi } from '../../src/api/types.js';
import type { RecordResourceName } from '../../src/core/resources.js';

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
    listUserPage: api.listUserPage.bind(api),
    getUser: api.getUser.bind(api),
    stats: api.stats.bind(api),
    keyOfCursor: api.keyOfCursor.bind(api),
    ...overrides,
  };
}

/** `makeApi`, each API of which aborts `controller` once it has handed out `pages` list pages: a run interrupted mid-walk. */
export function abortingAfterPages(makeApi: () => SalesApi, controller: AbortController, pages: number): () => SalesApi {
  return () => {
    const api = makeApi();
    let handedOut = 0;
    return wrapApi(api, {
      async *listPages(resource: RecordResourceName, options?: ListOptions) {
        for await (const page of api.listPages(resource, options)) {
          yield page;
          if (++handedOut === pages) controller.abort(new Error('test interruption'));
        }
      },
    });
  };
}
