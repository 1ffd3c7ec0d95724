/**
 * How fresh and healthy the mirror is, read from its runs: for `status`, alerts, and the worker's metrics
 * (`health-metrics.ts`, imported by itself: it loads prom-client).
 */
export {
  ageOf,
  collectStatus,
  FAILED_OUTCOMES,
  unpublishedStatus,
  type ResourceJobs,
  type ResourceStatus,
  type RunSummary,
} from './warehouse-status.js';
