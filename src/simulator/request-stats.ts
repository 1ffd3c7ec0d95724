import type { StatsSnapshot } from './types.js';

/** Counts of public requests: per key and status, per route, per exact path, rate-limit refusals and faults. */
export class RequestStats {
  private snapshot: StatsSnapshot = RequestStats.empty();

  private static empty(): StatsSnapshot {
    return { total: 0, byStatus: {}, byKey: {}, byRoute: {}, byPath: {}, rateLimited: 0, faults: {} };
  }

  record(method: string, path: string, key: string | null, status: number | 'none'): void {
    const s = this.snapshot;
    const statusKey = String(status);
    s.total += 1;
    s.byStatus[statusKey] = (s.byStatus[statusKey] ?? 0) + 1;
    const keyName = key ?? '-';
    const perKey = (s.byKey[keyName] ??= {});
    perKey[statusKey] = (perKey[statusKey] ?? 0) + 1;
    const route = `${method} ${path.replace(/\/[A-Za-z0-9]{18}\//g, '/{id}/')}`;
    s.byRoute[route] = (s.byRoute[route] ?? 0) + 1;
    const exact = `${method} ${path}`;
    s.byPath[exact] = (s.byPath[exact] ?? 0) + 1;
  }

  rateLimited(): void {
    this.snapshot.rateLimited += 1;
  }

  fault(kind: string): void {
    this.snapshot.faults[kind] = (this.snapshot.faults[kind] ?? 0) + 1;
  }

  read(): StatsSnapshot {
    return structuredClone(this.snapshot);
  }

  reset(): void {
    this.snapshot = RequestStats.empty();
  }
}
