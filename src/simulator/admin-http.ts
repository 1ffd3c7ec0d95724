import { invalidRequest, notFound } from './errors.js';
import type {
  ClockSettings,
  CommitLagScope,
  FaultKind,
  PropertyOption,
  RecordCorruption,
  RecordResource,
  Role,
  SimulatorAdmin,
  SummaryStatuses,
  UserCorruption,
} from './types.js';

/**
 * The admin surface over HTTP (`/_admin/...`): JSON in, JSON out, no auth, no rate limit, never faulted.
 * Each route calls the in-process admin; see README.md for the table.
 */

type Body = Record<string, unknown>;
type Handler = (params: string[], body: Body) => unknown;

const R = '([a-z-]+)';
const ID = '([^/]+)';

export type AdminRoute = [method: string, pattern: RegExp, handler: Handler];

const res = (value: string | undefined): RecordResource => value as RecordResource;
const str = (body: Body, name: string): string => {
  const v = body[name];
  if (typeof v !== 'string') throw invalidRequest(`${name} (文字列) は必須です。`);
  return v;
};
const props = (body: Body): Record<string, never> => (body['properties'] ?? {}) as Record<string, never>;

/** The route table of one simulator's admin. */
export function adminRoutes(a: SimulatorAdmin): AdminRoute[] {
  const routes: AdminRoute[] = [];
  const route = (method: string, pattern: string, handler: Handler): void => {
    routes.push([method, new RegExp(`^/_admin/${pattern}/?$`), handler]);
  };
  route('GET', 'truth', () => a.truth());
  route('GET', 'stats', () => a.stats());
  route('POST', 'stats/reset', () => (a.resetStats(), { ok: true }));
  route('GET', `records/${R}/${ID}`, ([r, id]) => {
    const record = a.getRecord(res(r), id as string);
    if (!record) throw notFound();
    return record;
  });
  route('POST', `records/${R}`, ([r], b) => a.createRecord(res(r), props(b)));
  route('PATCH', `records/${R}/${ID}`, ([r, id], b) => a.updateRecord(res(r), id as string, props(b)));
  route('DELETE', `records/${R}/${ID}`, ([r, id]) => (a.deleteRecord(res(r), id as string), { ok: true }));
  route('POST', `records/${R}/${ID}/restore`, ([r, id]) => a.restoreRecord(res(r), id as string));
  route('POST', `records/${R}/${ID}/link`, ([r, id], b) =>
    a.changeLink(res(r), id as string, str(b, 'property'), (b['id'] ?? null) as string | null),
  );
  route('POST', 'predictions/run', () => a.runPredictionBatch());
  route('POST', `activities/${R}`, ([r], b) => a.recordActivity(r as 'meeting-logs' | 'contact-activities', str(b, 'parent_id'), props(b)));
  route('PUT', `summaries/${ID}`, ([id], b) => a.setSummaries(id as string, (b['summaries'] ?? []) as never));
  route('POST', `summaries/${ID}/generate`, ([id]) => a.generateSummaries(id as string));
  route('POST', `properties/${R}`, ([r], b) =>
    a.addProperty(res(r), b as { display_name: string; property_type: string; api_name?: string; options?: PropertyOption[] }),
  );
  route('PATCH', `properties/${R}/${ID}`, ([r, name], b) => {
    const apiName = name as string;
    let last: unknown = null;
    if (b['display_name'] !== undefined) last = a.renameProperty(res(r), apiName, str(b, 'display_name'));
    if (b['options'] !== undefined) last = a.updatePropertyOptions(res(r), apiName, b['options'] as PropertyOption[]);
    if (b['property_type'] !== undefined) last = a.changePropertyType(res(r), apiName, str(b, 'property_type'));
    if (last === null) throw invalidRequest('display_name, options, property_type のいずれかを指定してください。');
    return last;
  });
  route('DELETE', `properties/${R}/${ID}`, ([r, name]) => (a.removeProperty(res(r), name as string), { ok: true }));
  route('POST', 'users', (_p, b) => a.addUser(b as { email: string; name: string; is_active?: boolean }));
  route('PATCH', `users/${ID}`, ([id], b) => {
    if (typeof b['is_active'] !== 'boolean') throw invalidRequest('is_active (真偽値) は必須です。');
    return a.setUserActive(id as string, b['is_active']);
  });
  route('DELETE', `users/${ID}`, ([id]) => (a.removeUser(id as string), { ok: true }));
  route('POST', 'keys', (_p, b) => (a.addKey(str(b, 'key'), str(b, 'role') as Role), { ok: true }));
  route('DELETE', `keys/${ID}`, ([key]) => (a.revokeKey(key as string), { ok: true }));
  route('POST', 'mutate', (_p, b) => a.mutateRandom(Number(b['count'] ?? 10), Number(b['seed'] ?? 1), b['kinds'] as never));
  route('PUT', 'faults', (_p, b) => (a.setFaults(b), { ok: true }));
  route('DELETE', 'faults', () => (a.clearFaults(), { ok: true }));
  route(
    'POST',
    'faults/next',
    (_p, b) => (a.failNext(Number(b['count'] ?? 1), str(b, 'kind') as FaultKind, b['path_prefix'] as string | undefined), { ok: true }),
  );
  route('PUT', 'commit-lag', (_p, b) => (a.setCommitLag(b['ms'] as number, b['scope'] as CommitLagScope | undefined), { ok: true }));
  route(
    'PUT',
    'read-replicas',
    (_p, b) => (a.setReadReplicas(b['count'] as number, b['serving'] as 'random' | number | undefined), { ok: true }),
  );
  route('PUT', 'clock', (_p, b) => (a.setClock(b as ClockSettings), { ok: true }));
  route('POST', 'cursors/expire', (_p, b) => (a.expireCursors(b['answer'] as 'invalid_request' | 'not_found' | undefined), { ok: true }));
  route('POST', 'replica', () => (a.keepReplica(), { ok: true }));
  route('PUT', 'single-views', (_p, b) => (a.routeSingleViews(str(b, 'from') as 'primary' | 'replica'), { ok: true }));
  route('PUT', 'summary-statuses', (_p, b) => (a.setSummaryStatuses(b as unknown as SummaryStatuses), { ok: true }));
  route('GET', 'corruptions', () => a.corrupted());
  route(
    'PUT',
    `corruptions/records/${R}/${ID}`,
    ([r, id], b) => (a.corruptRecord(res(r), id as string, str(b, 'corruption') as RecordCorruption), { ok: true }),
  );
  route('DELETE', `corruptions/records/${R}/${ID}`, ([r, id]) => (a.repairRecord(res(r), id as string), { ok: true }));
  route('PUT', `corruptions/users/${ID}`, ([id], b) => (a.corruptUser(id as string, str(b, 'corruption') as UserCorruption), { ok: true }));
  route('DELETE', `corruptions/users/${ID}`, ([id]) => (a.repairUser(id as string), { ok: true }));
  route('PUT', `records/${R}/${ID}/updated-at`, ([r, id], b) => a.setUpdatedAt(res(r), id as string, str(b, 'updated_at')));
  return routes;
}

/** Resolves an admin request to a result; throws ServiceError (or Error) on failure. */
export function handleAdmin(routes: AdminRoute[], method: string, path: string, body: unknown): { status: number; body: unknown } {
  for (const [m, pattern, handler] of routes) {
    const match = pattern.exec(path);
    if (!match || m !== method) continue;
    const params = match.slice(1).map((p) => decodeURIComponent(p));
    const result = handler(params, (body ?? {}) as Body);
    return { status: 200, body: result ?? { ok: true } };
  }
  throw notFound('管理APIのパスが存在しません。');
}
