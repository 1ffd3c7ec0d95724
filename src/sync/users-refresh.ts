import type { RejectedRecord, ServiceUser } from '../core/types.js';
import { listingNamesTheGone } from '../core/user-listing.js';
import type { ResourceResult, SyncDeps, SyncSettings } from './context.js';
import { fanOut } from './fan-out.js';
import { lookUp } from './look-up.js';
import { trackedRun, type RunContext } from './tracked-run.js';

/**
 * Users have no `updated_at`: the only faithful copy is a complete listing, replaced in one transaction. The spec
 * says the users list pages by cursor and no more: under an offset cursor a user removed behind it makes the listing
 * step over another. So a stored user the listing leaves out is asked for by its single view first, and marked
 * deleted only when that answers `not_found`.
 */
export function refreshUsers(deps: SyncDeps, settings: Pick<SyncSettings, 'detailConcurrency'>): Promise<ResourceResult> {
  return trackedRun(deps, { resource: 'users', mode: 'refresh', name: 'walk' }, async (run: RunContext) => {
    const { api, result, progress, report } = run;
    const users: ServiceUser[] = [];
    const rejects: RejectedRecord[] = [];
    let serverDate: string | null = null;
    report('walking');
    for await (const page of api.listUserPages(deps.signal ? { signal: deps.signal } : {})) {
      serverDate ??= page.serverDate;
      users.push(...page.results);
      for (const reject of page.rejects) {
        rejects.push(reject);
        run.log.warn({ id: reject.id, reason: reject.reason }, 'user rejected: kept in quarantine (rejected_records), retried every run');
      }
      result.pages += 1;
      result.records += page.results.length + page.rejects.length;
      progress.pages = result.pages;
      progress.records = result.records;
      report('walking');
    }
    if (listingNamesTheGone(users.length, rejects)) {
      const missing = unlisted(await deps.warehouse.liveUserIds(), users, rejects);
      const confirmed = await confirmMissing(run, settings.detailConcurrency, missing);
      users.push(...confirmed.users);
      rejects.push(...confirmed.rejects);
    }
    report('committing');
    const completedAt = serverDate ?? run.now().toISOString();
    const { written } = await deps.warehouse.replaceUsers(users, completedAt, { rejects, runId: run.runId });
    result.written = progress.written = written;
    result.rejected = rejects.length;
    result.passes = 1;
    result.watermark = serverDate;
  });
}

/** The stored users a listing named neither as a user nor as a rejected one. Pure. */
export function unlisted(live: readonly string[], users: readonly ServiceUser[], rejects: readonly RejectedRecord[]): string[] {
  const listed = new Set<string>(users.map((u) => u.id));
  for (const r of rejects) if (r.id !== null) listed.add(r.id);
  return live.filter((id) => !listed.has(id));
}

/**
 * GET each stored user the listing left out: one that answers is returned among `users` (the listing stepped over
 * it), an invalid one among `rejects` (it exists), and one that answers `not_found` in neither, to be marked deleted.
 * Any other failure fails the run before anything is written.
 */
async function confirmMissing(
  run: RunContext,
  concurrency: number,
  ids: readonly string[],
): Promise<{ users: ServiceUser[]; rejects: RejectedRecord[] }> {
  const confirmed = { users: [] as ServiceUser[], rejects: [] as RejectedRecord[] };
  if (ids.length === 0) return confirmed;
  const { api, deps, result, log } = run;
  log.info({ candidates: ids.length }, 'confirming users the listing left out, one GET each');
  await fanOut(ids, concurrency, deps.signal, async (id, signal) => {
    const answer = await lookUp(() => api.getUser(id, signal));
    result.details += 1;
    if (answer === 'not_found') return;
    if ('reject' in answer) confirmed.rejects.push(answer.reject);
    else confirmed.users.push(answer.found);
  });
  const found = confirmed.users.length + confirmed.rejects.length;
  if (found > 0) log.warn({ found }, 'users the listing left out still exist: written as they are, not marked deleted');
  return confirmed;
}
