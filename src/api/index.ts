/** The Sales Records Service client: `createSalesApi` and the errors it throws. */
export { createSalesApi, DEFAULT_PAGE_SIZE, DEFAULT_TIMEOUT_MS } from './client.js';
export { baseUrlWarnings } from './base-url.js';
export {
  SalesApiError,
  ServiceUnreachableError,
  RequestTimeoutError,
  InvalidResponseError,
  InvalidRecordError,
  RateLimitWaitError,
  KNOWN_SERVICE_CODES,
  dispositionFor,
  refusesCursor,
} from './errors.js';
export type { FieldError } from './errors.js';
export { MAX_CURSOR_REPEATS } from './pagination.js';
export { API_KEY_PATTERN, assertApiKeyFormat, keyFingerprint } from './keys.js';
export { DEFAULT_RETRY, MAX_RATE_LIMITED_RETRIES, retryDelayMs, parseServerDate } from './retry.js';
export type {
  SalesApi,
  SalesApiOptions,
  RetryOptions,
  ListOptions,
  ListPage,
  RequestStats,
  SearchRequest,
  FilterCondition,
  FilterOperator,
} from './types.js';
