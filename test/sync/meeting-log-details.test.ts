import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { SalesApi } from '../../src/api/types.js';
import { logsNeedingDetail, withMeetingLogDetails } from '../../src/sync/meeting-log-details.js';

const log = (id: string, updated_at: string) => ({ id, properties: {}, created_at: updated_at, updated_at });

describe('logsNeedingDetail', () => {
  it('asks for the single view of new logs and of logs whose updated_at moved, not of unchanged ones', () => {
    const stored = new Map([
      ['A00000000000000001', '2026-01-01T00:00:00.000001Z'],
      ['A00000000000000002', '2026-01-01T00:00:00.000001Z'],
    ]);
    const listed = [
      log('A00000000000000001', '2026-01-01T09:00:00.000001+09:00'), // same instant, other offset
      log('A00000000000000002', '2026-01-01T00:00:00.000002Z'), // moved by a microsecond
      log('A00000000000000003', '2026-01-01T00:00:00Z'), // new
    ];
    expect(logsNeedingDetail(listed, stored).map((r) => r.id)).toEqual(['A00000000000000002', 'A00000000000000003']);
  });
});

describe('withMeetingLogDetails', () => {
  it("reads the single views yielding, so the walks' pages go before a page's details", async () => {
    const asked: unknown[] = [];
    const api = {
      getMeetingLog: async (id: string, _signal?: AbortSignal, options?: unknown) => {
        asked.push(options);
        return { ...log(id, '2026-01-01T00:00:00Z'), summaries: [] };
      },
    } as unknown as SalesApi;
    const page = [log('A00000000000000001', '2026-01-01T00:00:00Z'), log('A00000000000000002', '2026-01-01T00:00:00Z')];
    const detailed = await withMeetingLogDetails(api, page, new Map(), 8, pino({ level: 'silent' }));
    expect(detailed.records.map((r) => r.id)).toEqual(['A00000000000000001', 'A00000000000000002']);
    expect(asked).toEqual([{ yielding: true }, { yielding: true }]);
  });
});
