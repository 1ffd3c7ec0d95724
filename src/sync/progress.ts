import type { ResourceName } from '../core/resources.js';

export type ResourcePhase = 'queued' | 'properties' | 'walking' | 'committing' | 'done' | 'failed' | 'interrupted';

export interface ResourceProgress {
  resource: ResourceName;
  phase: ResourcePhase;
  pages: number;
  records: number;
  requests: number;
  /** Records committed so far. */
  written: number;
  startedAtMs: number;
  resumed: boolean;
}

/** Where a walk reports how it is doing: the CLI draws it, a job forwards it, tests ignore it. */
export interface ProgressSink {
  update(progress: Readonly<ResourceProgress>): void;
}

export const silentProgress: ProgressSink = { update: () => undefined };
