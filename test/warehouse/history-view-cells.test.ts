/**
 * The live table's typed cells come from `toColumnValue` (JavaScript); `<table>_history_view` types each version's
 * values in SQL. Here, for thousands of seeded values of every kind (JSON numbers, booleans, null, strings: every
 * case of sql-cells-divergence.test.ts, random ones, whitespace around values, dates and instants of every form),
 * each type's cell in the history view must be the cell `toColumnValue` makes, as the live table holds it; and
 * through the real warehouse, a record's current version must equal its live view row, cell for cell.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DuckDBInstance, type DuckDBConnection } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { PropertyDefinition, PropertyValue, ServiceRecord } from '../../src/core/types.js';
import { parseDateDays, parseInstantMicros } from '../../src/core/time.js';
import { createPrng, type Prng } from '../../src/simulator/prng.js';
import type { SqlType } from '../../src/warehouse/column-types.js';
import { historyViewSql, type HistoryViewProperty } from '../../src/warehouse/history-views.js';
import { openWarehouse } from '../../src/warehouse/index.js';
import { toColumnValue } from '../../src/warehouse/rows.js';

const TYPES: readonly SqlType[] = ['DOUBLE', 'BOOLEAN', 'DATE', 'TIMESTAMPTZ', 'VARCHAR', 'JSON'];

/** A value as a property holds it; undefined: the key is absent. */
type Value = PropertyValue | undefined;

/** Where TRY_CAST and toColumnValue part (sql-cells-divergence.test.ts), and what DuckDB reads otherwise. */
const DIVERGENT: readonly string[] = [
  'inf',
  'NaN',
  '1_000',
  '\u30001\u3000',
  'yes',
  't',
  '1',
  'TRUE ',
  '2025-1-5',
  '2025-01-05T00:00:00Z',
  '-inf',
  'Infinity',
  '+1',
  '.5',
  '1.',
  '1e5',
  '1E+5',
  '0x10',
  '1,000',
  '１',
  '1e999',
  '-1e999',
  `1${'0'.repeat(400)}`,
  `0.${'0'.repeat(400)}1`,
  '-0',
  '',
  ' ',
  'no',
  'on',
  'off',
  '0',
  'f',
  'y',
  'n',
  'falſe',
  'tRuE',
  '\ttrue\n',
  '2025-01-05 ',
  ' 2025-01-05',
  '02025-01-05',
  '2025-01-05T10:00:00',
  '2025-01-05 10:00',
  '2025-01-05T24:00:00Z',
  '2025-01-05T23:59:60Z',
  '2025-01-05T10:00:00+24:00',
  '2025-01-05T10:00:00+09:60',
  '2025-01-05T10:00:00 +09:00',
  '2025-01-05T10:00:00UTC',
  '1e21',
  '1e+21',
  '-1.5e300',
  '1E21',
  '"1"',
  'null',
  '\\u001F',
  '\\\u001f',
  '\\\\u000B\u000b',
];

const NUMBERS: readonly number[] = [
  0,
  -0,
  1,
  -1,
  0.1,
  1.5,
  1e20,
  1e21,
  -1e21,
  1e-7,
  1.5e-7,
  0.000001,
  5e-324,
  Number.MAX_VALUE,
  -Number.MAX_VALUE,
  Number.MAX_SAFE_INTEGER + 2,
  2 ** 63,
  -(2 ** 63),
  2 ** 64,
  2 ** 70,
  -(2 ** 70),
  123456789012345680000,
];

/** Seeded values of every kind, each case above among them. */
function valuesOf(prng: Prng): Value[] {
  // A number and its text side by side: each row's second property holds the next value.
  const values: Value[] = [undefined, null, true, false, ...NUMBERS, ...DIVERGENT, 1e21, '1e21', -2.5e100, '-2.5e100', 1e21];
  for (let i = 0; i < 400; i++) values.push(randomNumber(prng));
  for (let i = 0; i < 600; i++) values.push(decimalText(prng), booleanText(prng), dateText(prng), instantText(prng), randomText(prng));
  // Every character of the BMP (surrogates aside: the client mends a lone one to U+FFFD) around a number; the ones
  // JavaScript trims, and every eighth other, around a boolean.
  for (let code = 0; code < 0x10000; code++) {
    if (code >= 0xd800 && code < 0xe000) continue;
    const c = String.fromCharCode(code);
    values.push(`${c}${c}1.5${c}`, code % 8 === 0 || `${c}`.trim() === '' ? `${c}tRUE${c}` : `x${c}`);
  }
  // Every control character in a string, after a backslash and an escaped one (JSON escapes).
  for (let code = 0; code < 0x20; code++) {
    const c = String.fromCharCode(code);
    values.push(`a${c}b`, `\\${c}`, `\\\\${c}${c}`);
  }
  return values;
}

function randomNumber(prng: Prng): number {
  switch (prng.int(4)) {
    case 0: {
      // Any finite double, from its bits.
      const view = new DataView(new ArrayBuffer(8));
      view.setUint32(0, prng.int(2 ** 32));
      view.setUint32(4, prng.int(2 ** 32));
      const x = view.getFloat64(0);
      return Number.isFinite(x) ? x : 0;
    }
    case 1:
      return Math.round(prng.next() * 10 ** prng.int(25)) * (prng.chance(0.5) ? -1 : 1);
    case 2:
      return prng.next() * 10 ** (prng.int(80) - 40);
    default:
      return Number((prng.next() * 1000).toFixed(prng.int(7)));
  }
}

/** The whitespace JavaScript trims, a few it does not (U+180E, U+0085, U+200B), and none. */
const SPACES = ['', ' ', '\t', '\n', '\r\n', '\v', '\f', '\u00a0', '\u3000', '\u2028', '\ufeff', '\u180e', '\u0085', '\u200b'];
const padded = (prng: Prng, text: string) => `${prng.pick(SPACES)}${text}${prng.pick(SPACES)}`;
const digits = (prng: Prng, min: number, max: number) =>
  Array.from({ length: prng.between(min, max) }, () => String(prng.int(10))).join('');

function decimalText(prng: Prng): string {
  const sign = prng.pick(['', '', '+', '-', '--']);
  const whole = prng.chance(0.8) ? digits(prng, 1, prng.chance(0.1) ? 400 : 8) : '';
  const fraction = prng.chance(0.5) ? `${prng.pick(['.', '.', ','])}${digits(prng, 0, 6)}` : '';
  const exponent = prng.chance(0.3) ? `${prng.pick(['e', 'E', 'e+', 'e-', 'x'])}${digits(prng, 0, 3)}` : '';
  const junk = prng.chance(0.1) ? prng.pick(['_', 'f', 'd', 'NaN', 'inf']) : '';
  return padded(prng, `${sign}${whole}${fraction}${exponent}${junk}`);
}

function booleanText(prng: Prng): string {
  const word = prng.pick(['true', 'false', 'yes', 'no', 't', 'f', '1', '0', 'on', 'tru', 'falsey']);
  const cased = Array.from(word, (c) => (prng.chance(0.5) ? c.toUpperCase() : c)).join('');
  return padded(prng, cased);
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

function dateText(prng: Prng): string {
  const year = prng.pick([0, 1, 1900, 2000, 2024, 2025, 9999, prng.int(10000)]);
  const month = prng.chance(0.9) ? prng.between(1, 12) : prng.pick([0, 13]);
  const day = prng.chance(0.8) ? prng.between(1, 28) : prng.pick([0, 29, 30, 31, 32]);
  const text = `${pad(year, prng.chance(0.95) ? 4 : 5)}-${pad(month, 2)}-${pad(day, 2)}`;
  return prng.chance(0.1) ? padded(prng, text) : text;
}

/** Instants of every form `canonicalInstant` reads, and near misses. */
function instantText(prng: Prng): string {
  const year = prng.pick([0, 1, 999, 1970, 2024, 9999, prng.int(10000), 10000, 99999, 294246, 294247, 294248, 999999]);
  const yearText = pad(year, prng.pick([4, 4, 4, 5, 6, 3]));
  const date = `${yearText}-${pad(prng.chance(0.95) ? prng.between(1, 12) : 13, 2)}-${pad(prng.pick([1, 10, 28, 29, 30, 31, 0, 32, prng.between(1, 28)]), 2)}`;
  const separator = prng.pick(['T', 'T', 't', ' ', '_', 'TT']);
  const time = `${pad(prng.chance(0.95) ? prng.int(24) : 24, 2)}:${pad(prng.chance(0.95) ? prng.int(60) : 60, 2)}`;
  const seconds = prng.chance(0.8) ? `:${pad(prng.chance(0.95) ? prng.int(60) : 60, 2)}` : '';
  const fraction = seconds !== '' && prng.chance(0.6) ? `${prng.pick(['.', ',', '.'])}${digits(prng, prng.chance(0.1) ? 0 : 1, 12)}` : '';
  const oh = pad(prng.chance(0.9) ? prng.int(24) : prng.pick([24, 25, 99]), 2);
  const om = pad(prng.chance(0.9) ? prng.int(60) : prng.pick([60, 61, 99]), 2);
  const sign = prng.pick(['+', '-']);
  const offset = prng.pick([
    '',
    'Z',
    'z',
    `${sign}${oh}`,
    `${sign}${oh}${om}`,
    `${sign}${oh}:${om}`,
    `${sign}${oh}:${om}`,
    `${sign}9`,
    `${sign}${oh}:`,
    ' Z',
  ]);
  return `${date}${separator}${time}${seconds}${fraction}${offset}`;
}

const ALPHABET = [...'0123456789-:+.,eETtZz_ fxyé"\\/', '\u3000', '\u00a0', '\n', '\u0000', '\u001f', '\u2028', '😀', '\ufffd'];

function randomText(prng: Prng): string {
  return Array.from({ length: prng.int(14) }, () => prng.pick(ALPHABET)).join('');
}

/** A property of each type twice, the second holding the next row's value: a cell read from another's place shows. */
const PROPERTIES: HistoryViewProperty[] = [...TYPES, ...[...TYPES].reverse()].map((sqlType, i) => ({
  apiName: `${i < TYPES.length ? 'a' : 'b'}_${sqlType.toLowerCase()}`,
  alias: `${i < TYPES.length ? 'a' : 'b'}_${sqlType}`,
  sqlType,
  optionKey: null,
}));

/** The view's cell in a form JavaScript compares exactly: days and microseconds since the epoch, JSON as text. */
function cellSql(p: HistoryViewProperty): string {
  const column = `"${p.alias}"`;
  switch (p.sqlType) {
    case 'DATE':
      return `CAST(${column} - DATE '1970-01-01' AS INTEGER)`;
    case 'TIMESTAMPTZ':
      return `epoch_us(${column})`;
    case 'JSON':
      return `CAST(${column} AS VARCHAR)`;
    case 'VARCHAR':
      // Behind a character of its own: the client's UTF-8 decoding drops a text's leading U+FEFF.
      return `'<' || ${column}`;
    default:
      return column;
  }
}

/** DuckDB's TIMESTAMPTZ ends at 294247-01-10T04:00:54.775806Z (the last microsecond is infinity's). */
const MAX_MICROS = 9223372036854775806n;
const YEAR_0000_MICROS = parseInstantMicros('0000-01-01T00:00:00Z')!;

/**
 * The cell the live table holds for `value`, in `cellSql`'s form: what `toColumnValue` makes, as the row's NDJSON
 * carries it (a DOUBLE's -0 is written 0).
 */
function liveCell(value: Value, sqlType: SqlType): unknown {
  const cell = toColumnValue(value, sqlType);
  if (cell === null) return null;
  switch (sqlType) {
    case 'DOUBLE':
      return JSON.parse(JSON.stringify(cell)) as number;
    case 'DATE':
      return parseDateDays(cell as string);
    case 'TIMESTAMPTZ':
      return parseInstantMicros(cell as string);
    default:
      return cell;
  }
}

const show = (x: unknown) => (typeof x === 'bigint' ? `${x}n` : Object.is(x, -0) ? '-0' : JSON.stringify(x));

describe('history view cells, against toColumnValue', () => {
  let instance: DuckDBInstance;
  let connection: DuckDBConnection;
  const values = valuesOf(createPrng(20261206));
  const at = (row: number) => values[row % values.length];
  /** The view's cells, by row: one object per row of `values`. */
  let cells: Record<string, unknown>[];

  beforeAll(async () => {
    instance = await DuckDBInstance.create(':memory:');
    connection = await instance.connect();
    // An offset-less date-time is UTC to toColumnValue, whatever the session's zone: this one is -03:30.
    await connection.run(`SET TimeZone = 'America/St_Johns'`);
    await connection.run(`CREATE TABLE raw (row INTEGER, properties VARCHAR)`);
    const appender = await connection.createAppender('raw');
    values.forEach((_, row) => {
      const properties: Record<string, PropertyValue> = {};
      for (const [i, p] of PROPERTIES.entries()) {
        const value = at(i < TYPES.length ? row : row + 1);
        if (value !== undefined) properties[p.apiName] = value;
      }
      appender.appendInteger(row);
      // A third of the rows spaced out (`"k": 1e+21`), as no writer of ours stores them: the view must not mind.
      appender.appendVarchar(row % 3 === 2 ? JSON.stringify(properties, null, 1) : JSON.stringify(properties));
      appender.endRow();
    });
    appender.closeSync();
    // Shaped like a history table; a third of the rows hold the properties as yyjson writes them again (as read_json does).
    await connection.run(
      `CREATE TABLE cells_history AS
       SELECT CAST(row AS VARCHAR) AS id, CAST(NULL AS TIMESTAMPTZ) AS created_at, CAST(NULL AS TIMESTAMPTZ) AS updated_at,
              CASE WHEN row % 3 = 1 THEN json(properties) ELSE CAST(properties AS JSON) END AS properties,
              TIMESTAMPTZ '2026-01-01 00:00:00+00' AS valid_from, CAST(NULL AS TIMESTAMPTZ) AS valid_to, true AS is_current,
              'updated_at' AS valid_from_basis, 'sync' AS source, CAST(NULL AS VARCHAR) AS run_id, CAST(row AS BIGINT) AS change_seq,
              false AS deleted, TIMESTAMPTZ '2026-01-01 00:00:00+00' AS observed_at
       FROM raw`,
    );
    await connection.run(historyViewSql('cells', PROPERTIES));
    const reader = await connection.runAndReadAll(
      `SELECT ${PROPERTIES.map((p) => `${cellSql(p)} AS "${p.alias}"`).join(', ')} FROM cells_history_view ORDER BY change_seq`,
    );
    cells = reader.getRowObjectsJS() as Record<string, unknown>[];
  });
  afterAll(() => {
    connection?.closeSync();
    instance?.closeSync();
  });

  it('has a row for each of over 130,000 values', () => {
    expect(values.length).toBeGreaterThan(130_000);
    expect(cells).toHaveLength(values.length);
  });

  it.each(TYPES)('types every value as a %s cell exactly as the live table holds it', (sqlType) => {
    const differences: string[] = [];
    for (const p of PROPERTIES.filter((q) => q.sqlType === sqlType)) {
      const offset = p.alias.startsWith('a_') ? 0 : 1;
      cells.forEach((row, i) => {
        const value = at(i + offset);
        const expected = liveCell(value, sqlType);
        if (expected === 'unwritable') return;
        const got = p.sqlType === 'VARCHAR' && typeof row[p.alias] === 'string' ? (row[p.alias] as string).slice(1) : row[p.alias];
        const equal = typeof expected === 'number' ? Object.is(got, expected) : got === expected;
        if (!equal) differences.push(`${show(value)}: view ${show(got)}, live ${show(expected)}`);
      });
    }
    expect({ count: differences.length, first: differences.slice(0, 20) }).toEqual({ count: 0, first: [] });
  });

  it("an instant no TIMESTAMPTZ column holds (before year 0000 in UTC, past DuckDB's last) is NULL live and in the view", () => {
    const unstorable = values.flatMap((value, i) => {
      const micros = typeof value === 'string' ? parseInstantMicros(value) : null;
      return micros !== null && (micros > MAX_MICROS || micros < YEAR_0000_MICROS) ? [[value, i] as const] : [];
    });
    expect(unstorable.length).toBeGreaterThan(10);
    for (const [value, i] of unstorable) {
      expect(toColumnValue(value, 'TIMESTAMPTZ'), show(value)).toBeNull();
      expect(cells[i]!.a_TIMESTAMPTZ, show(value)).toBeNull();
    }
  });

  it('covers each kind: numbers, booleans, null, every form of instant and of number text', () => {
    const kinds = new Set(values.map((v) => (v === undefined ? 'absent' : v === null ? 'null' : typeof v)));
    expect([...kinds].sort()).toEqual(['absent', 'boolean', 'null', 'number', 'string']);
    const instants = values.filter((v): v is string => typeof v === 'string' && toColumnValue(v, 'TIMESTAMPTZ') !== null);
    for (const form of [
      /T/,
      /t/,
      /\d \d/,
      /,\d/,
      /\.\d{7}/,
      /Z$/,
      /z$/,
      /[+-]\d\d$/,
      /[+-]\d{4}$/,
      /[+-]\d\d:\d\d$/,
      /\d\d:\d\d$/,
      /^\d{5}-/,
      /^0000-/,
      /^9999-/,
    ]) {
      expect(
        instants.some((v) => form.test(v)),
        String(form),
      ).toBe(true);
    }
    const doubles = values.filter((v) => typeof v === 'string' && toColumnValue(v, 'DOUBLE') !== null);
    expect(doubles.length).toBeGreaterThan(200);
    expect(values.filter((v) => typeof v === 'string' && toColumnValue(v, 'DATE') !== null).length).toBeGreaterThan(300);
  });
});

describe('history view cells, through the warehouse', () => {
  const def = (api_name: string, property_type: string, options: PropertyDefinition['options'] = []): PropertyDefinition => ({
    api_name,
    display_name: api_name,
    property_type,
    is_core: false,
    is_required_on_create: false,
    options,
  });
  const DEFINITIONS: PropertyDefinition[] = [
    def('number', 'number'),
    def('flag', 'boolean'),
    def('day', 'date'),
    def('moment', 'datetime'),
    def('note', 'text'),
    def('extra', 'picklist'),
    def('choice', 'select', [
      { value: '1e+21', label: 'big' },
      { value: 'true', label: 'yes' },
    ]),
    def('pick', 'picklist', [
      { value: '1e21', label: 'big' },
      { value: 'true', label: 'yes' },
    ]),
  ];
  const ID = (n: number) => `D${String(n).padStart(17, '0')}`;

  it("a record's current version equals its live view row, cell for cell and type for type", async () => {
    const prng = createPrng(7);
    // Every value, instants no column holds included: they are NULL cells, not a failed commit.
    const writable = valuesOf(prng);
    const sample = [...writable.slice(0, 200), ...Array.from({ length: 1500 }, () => prng.pick(writable))];
    const dir = mkdtempSync(join(tmpdir(), 'salesync-history-cells-'));
    const warehouse = openWarehouse({ path: join(dir, 'mirror.duckdb'), lockTimeoutMs: 1500 });
    try {
      await warehouse.applyPropertyDefinitions('deals', DEFINITIONS);
      const records = (shift: number, updatedAt: string): ServiceRecord[] =>
        sample.map((_, n) => {
          const properties: Record<string, PropertyValue> = {};
          DEFINITIONS.forEach((d, i) => {
            const value = sample[(n + i + shift) % sample.length];
            if (value !== undefined) properties[d.api_name] = value;
          });
          return { id: ID(n), properties, created_at: '2026-01-01T00:00:00Z', updated_at: updatedAt };
        });
      const checkpoint = { cursor: 'c', updatedAfter: null, startedAt: '2026-01-05T00:00:00Z', mode: 'full' as const };
      await warehouse.commitBatch('deals', { records: records(0, '2026-01-01T00:00:00Z'), checkpoint });
      await warehouse.commitBatch('deals', { records: records(1, '2026-01-02T00:00:00Z'), checkpoint });

      const columns = DEFINITIONS.map((d) => `"${d.api_name}"`);
      const types = await warehouse.query(
        `SELECT column_name, data_type, table_name FROM duckdb_columns()
         WHERE table_name IN ('deals_view', 'deals_history_view') AND column_name IN (${DEFINITIONS.map((d) => `'${d.api_name}'`).join(', ')})
         ORDER BY column_name, table_name`,
      );
      const typeOf = (table: string) =>
        Object.fromEntries(types.filter((t) => t.table_name === table).map((t) => [t.column_name, t.data_type]));
      expect(typeOf('deals_history_view')).toEqual(typeOf('deals_view'));
      expect(typeOf('deals_view')).toMatchObject({
        number: 'DOUBLE',
        flag: 'BOOLEAN',
        day: 'DATE',
        moment: 'TIMESTAMP WITH TIME ZONE',
        extra: 'JSON',
      });

      const differing = await warehouse.query(
        `SELECT v.id, ${columns.map((c) => `CAST(v.${c} AS VARCHAR) AS ${c}`).join(', ')}
         FROM deals_view AS v JOIN deals_history_view AS h ON h.id = v.id AND h.is_current
         WHERE ${columns.map((c) => `v.${c} IS DISTINCT FROM h.${c} OR CAST(v.${c} AS VARCHAR) IS DISTINCT FROM CAST(h.${c} AS VARCHAR)`).join(' OR ')}`,
      );
      expect(differing).toEqual([]);
      const [{ current, closed }] = (await warehouse.query(
        `SELECT count(*) FILTER (WHERE is_current) AS current, count(*) FILTER (WHERE NOT is_current) AS closed FROM deals_history_view`,
      )) as [{ current: unknown; closed: unknown }];
      expect([Number(current), Number(closed)]).toEqual([sample.length, sample.length]);
      // Labels follow the text each view reads: JavaScript's for a select, DuckDB's for a JSON value.
      const labels = await warehouse.query(
        `SELECT DISTINCT choice, pick FROM deals_history_view WHERE choice = 'big' OR pick = 'big' OR choice = 'yes' OR pick = 'yes'`,
      );
      expect(labels.length).toBeGreaterThan(0);
    } finally {
      await warehouse.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
