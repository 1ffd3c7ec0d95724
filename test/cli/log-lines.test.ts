import { describe, expect, it } from 'vitest';
import { humanLogLine } from '../../src/cli/log-lines.js';
import { formatTable } from '../../src/cli/table.js';

describe('humanLogLine', () => {
  it('turns a pino JSON line into time, level, resource, message and fields', () => {
    const line = JSON.stringify({
      level: 40,
      time: '2026-11-21T12:00:01.000Z',
      app: 'salesync',
      resource: 'deals',
      msg: 'retrying',
      delayMs: 500,
    });
    expect(humanLogLine(line)).toBe('12:00:01 WARN  deals: retrying delayMs=500');
  });
  it('passes through a line that is not JSON', () => {
    expect(humanLogLine('plain words')).toBe('plain words');
  });
});

describe('formatTable', () => {
  it('right-aligns numeric columns and shows missing values as -', () => {
    expect(
      formatTable(
        ['name', 'n'],
        [
          ['a', 1000],
          ['bb', null],
        ],
      ),
    ).toBe('name      n\n----  -----\na     1,000\nbb        -');
  });
  it('lays out a result of 300,000 rows, as `salesync query` may print one', () => {
    const rows = Array.from({ length: 300_000 }, (_, i) => [`row ${i}`, i]);
    const table = formatTable(['name', 'n'], rows);
    expect(table.split('\n')).toHaveLength(300_002);
    expect(table.split('\n')[2]).toBe('row 0             0');
  });
});
