import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { MeetingLogSummary, ServiceRecord } from '../../src/core/types.js';
import { openWarehouse, type SummariesDue, type Warehouse } from '../../src/warehouse/index.js';

const HOUR = 3_600_000;
const T0 = Date.parse('2026-01-10T00:00:00Z');
const at = (ms: number) => new Date(ms).toISOString();
const LOG = (n: number) => `M${String(n).padStart(17, '0')}`;

function log(n: number, created_at = '2026-01-0' + n + 'T00:00:00Z'): ServiceRecord {
  return { id: LOG(n), properties: {}, created_at, updated_at: '2026-01-09T00:00:00.123456Z' };
}
const summary = (status: string, text = 't'): MeetingLogSummary => ({
  summary_type: 'overview',
  result_type: 'text',
  text,
  selections: [{ value: 'hot', level: 1, order: 1 }],
  reason: '',
  status,
  updated_at: '2026-01-01T00:00:00.123456Z',
});

let dir: string;
let warehouse: Warehouse;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'salesync-summaries-'));
  warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
  await warehouse.commitBatch('meeting-logs', { records: [log(1), log(2)] });
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The logs due at `now` (ms), learned settledness unless `finalStatuses`, a window from 2026-01-01. */
const due = async (now: number, extra: Partial<SummariesDue> = {}) => [
  ...(
    await warehouse.logsAwaitingSummaries({
      createdAfter: '2026-01-01T00:00:00Z',
      serverNow: at(now),
      finalStatuses: null,
      recheckMs: HOUR,
      ...extra,
    })
  ).keys(),
];
const read = (summaries: Map<string, MeetingLogSummary[]>, readAt: number) =>
  warehouse.commitBatch('meeting-logs', { records: [], summaries, summariesReadAt: at(readAt) });

describe('meeting log summaries re-read schedule', () => {
  it('rewrites summaries only for logs whose summaries changed', async () => {
    const first = await read(
      new Map([
        [LOG(1), [summary('pending')]],
        [LOG(2), []],
      ]),
      T0,
    );
    expect(first.summariesChanged).toBe(1);
    expect(
      (
        await read(
          new Map([
            [LOG(1), [summary('pending')]],
            [LOG(2), []],
          ]),
          T0,
        )
      ).summariesChanged,
    ).toBe(0);
    expect((await read(new Map([[LOG(1), [summary('completed')]]]), T0)).summariesChanged).toBe(1);
    expect(await warehouse.query(`SELECT status FROM meeting_log_summaries`)).toEqual([{ status: 'completed' }]);
  });

  it('a log never read is due at once, newest first, with its stored updated_at', async () => {
    const found = await warehouse.logsAwaitingSummaries({
      createdAfter: '2026-01-01T00:00:00Z',
      serverNow: at(T0),
      finalStatuses: null,
      recheckMs: HOUR,
    });
    expect([...found]).toEqual([
      [LOG(2), '2026-01-09T00:00:00.123456Z'],
      [LOG(1), '2026-01-09T00:00:00.123456Z'],
    ]);
  });

  it('a first read makes the next due one base later; each unchanged read doubles the spacing', async () => {
    await read(new Map([[LOG(1), [summary('pending')]]]), T0);
    expect(await due(T0 + HOUR - 1)).toEqual([LOG(2)]);
    expect(await due(T0 + HOUR)).toEqual([LOG(2), LOG(1)]);

    await read(new Map([[LOG(1), [summary('pending')]]]), T0 + HOUR); // unchanged: 1
    expect(await due(T0 + 3 * HOUR - 1)).toEqual([LOG(2)]);
    expect(await due(T0 + 3 * HOUR)).toEqual([LOG(2), LOG(1)]);

    await read(new Map([[LOG(1), [summary('pending')]]]), T0 + 3 * HOUR); // unchanged: 2
    expect(await due(T0 + 7 * HOUR - 1)).toEqual([LOG(2)]);
    expect(await due(T0 + 7 * HOUR)).toEqual([LOG(2), LOG(1)]);
    expect(await warehouse.query(`SELECT meeting_log_id AS id, unchanged_reads AS n FROM meeting_log_summary_reads`)).toEqual([
      { id: LOG(1), n: 2 },
    ]);
  });

  it('a first read that found no summaries counts as a read too', async () => {
    await read(new Map([[LOG(1), []]]), T0);
    expect(await due(T0 + HOUR - 1)).toEqual([LOG(2)]);
    await read(new Map([[LOG(1), []]]), T0 + HOUR);
    expect(await due(T0 + 3 * HOUR - 1)).toEqual([LOG(2)]);
    expect(await due(T0 + 3 * HOUR)).toEqual([LOG(2), LOG(1)]);
  });

  it('a read that found the summaries changed resets the spacing to one base', async () => {
    await read(new Map([[LOG(1), [summary('pending')]]]), T0);
    await read(new Map([[LOG(1), [summary('pending')]]]), T0 + HOUR);
    await read(new Map([[LOG(1), [summary('pending')]]]), T0 + 3 * HOUR);
    await read(new Map([[LOG(1), [summary('pending', 'more text')]]]), T0 + 7 * HOUR);
    expect(await due(T0 + 8 * HOUR - 1)).toEqual([LOG(2)]);
    expect(await due(T0 + 8 * HOUR)).toEqual([LOG(2), LOG(1)]);
  });

  it('the spacing follows the base the caller gives', async () => {
    await read(new Map([[LOG(1), [summary('pending')]]]), T0);
    expect(await due(T0 + 5 * 60_000, { recheckMs: 5 * 60_000 })).toEqual([LOG(2), LOG(1)]);
  });

  it('summaries written without a read time leave the schedule as it is', async () => {
    await read(new Map([[LOG(1), [summary('pending')]]]), T0);
    await warehouse.commitBatch('meeting-logs', { records: [], summaries: new Map([[LOG(1), [summary('done')]]]) });
    expect(await due(T0 + HOUR - 1)).toEqual([LOG(2)]);
  });

  it('the window ends it: a log created before createdAfter is never due, nor one marked deleted', async () => {
    expect(await due(T0, { createdAfter: '2026-01-02T00:00:00Z' })).toEqual([LOG(2)]);
    await warehouse.completeSweep('meeting-logs', {
      key: 'k',
      stateKey: 'meeting-logs#reconcile',
      deletedIds: [LOG(2)],
      deletedAt: at(T0),
      completedAt: at(T0),
    });
    expect(await due(T0)).toEqual([LOG(1)]);
  });

  it("finalStatuses (the operator's list) settles at once a log whose summaries are non-empty and all in it", async () => {
    await warehouse.commitBatch('meeting-logs', { records: [log(3)] });
    await read(
      new Map([
        [LOG(1), [summary('completed'), summary('failed')]],
        [LOG(2), [summary('completed'), summary('pending')]],
        [LOG(3), []],
      ]),
      T0,
    );
    const later = T0 + 2 * HOUR;
    expect(await due(later, { finalStatuses: ['completed', 'failed'] })).toEqual([LOG(3), LOG(2)]);
    expect(await due(later, { finalStatuses: ['failed'] })).toEqual([LOG(3), LOG(2), LOG(1)]);
    // Still only when due: a log read a moment ago waits for its time.
    expect(await due(T0 + 1, { finalStatuses: ['failed'] })).toEqual([]);
    expect(await due(later, { finalStatuses: [] })).toEqual([LOG(3), LOG(2), LOG(1)]);
  });
});
