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

/** A walk's progress, and `report(phase)` that stamps the requests made so far and hands a copy to `sink`. */
export function trackProgress(
  resource: ResourceName,
  startedAtMs: number,
  requestsSoFar: () => number,
  sink: ProgressSink = silentProgress,
): { progress: ResourceProgress; report: (phase?: ResourcePhase) => void } {
  const progress: ResourceProgress = { resource, phase: 'properties', pages: 0, records: 0, requests: 0, written: 0, startedAtMs, resumed: false };
  const report = (phase: ResourcePhase = progress.phase) => {
    progress.phase = phase;
    progress.requests = requestsSoFar();
    sink.update({ ...progress });
  };
  return { progress, report };
}
