export { runSync, checkConnection, primaryFailure } from './run-sync.js';
export type { SyncReport, SyncRunOptions } from './run-sync.js';
export { syncResource } from './sync-resource.js';
export type { ResourceResult, SyncDeps, SyncSettings } from './sync-resource.js';
export { createSyncEnvironment, createWarehouse } from './environment.js';
export type { SyncEnvironment, EnvironmentOptions } from './environment.js';
export type { ProgressSink, ResourceProgress } from './progress.js';
export { planWalk, nextWatermark, shouldFlush } from './window.js';
