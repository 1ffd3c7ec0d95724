/** Record → row: pure decisions about what each column holds. No I/O. */
import { hash } from 'node:crypto';
import type { MeetingLogSummary, PropertyValue, ServiceRecord } from '../core/types.js';
import { SalesyncError } from '../core/errors.js';
import type { ColumnPlan } from './types.js';
import type { SqlType } from './column-types.js';
import { ChunkCarver, type ChunkSource, type SlabPool } from './slab-pool.js';
import { canonicalInstant, parseDateDays, parseInstantMicros } from '../core/time.js';

/**
 * A cell as staged: VARCHAR/JSON → string, DOUBLE → number, BOOLEAN → boolean,
 * DATE → `YYYY-MM-DD`, TIMESTAMPTZ → canonical ISO (UTC, microseconds).
 */
export type CellValue = string | number | boolean | null;

/** Column types a staged row may have: the property types plus the summaries' own. */
export type StageType = SqlType | 'INTEGER' | typeof SELECTIONS_TYPE;

// BIGINT: the spec gives the integers no range (an `order` may be a time in milliseconds).
export const SELECTIONS_TYPE = 'STRUCT(value VARCHAR, level BIGINT, "order" BIGINT)[]';

export interface StageColumn {
  name: string;
  sqlType: StageType;
  /** The cell is a JSON value written as is (not text holding JSON): the raw properties. */
  nested?: true;
}

export type StagedRow = Record<string, unknown>;

const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * Best-effort cast of a property value to its column's type; a value that does not fit is NULL
 * (the raw value always stays in `_properties`).
 */
export function toColumnValue(value: PropertyValue | undefined, sqlType: SqlType): CellValue {
  if (value === null || value === undefined) return null;
  switch (sqlType) {
    case 'JSON':
      return JSON.stringify(value);
    case 'VARCHAR':
      // A number or boolean has one exact text form: keeping it loses nothing.
      return typeof value === 'string' ? value : String(value);
    case 'DOUBLE':
      if (typeof value === 'number') return Number.isFinite(value) ? value : null;
      if (typeof value === 'string' && DECIMAL.test(value.trim())) {
        const parsed = Number(value.trim());
        return Number.isFinite(parsed) ? parsed : null;
      }
      return null;
    case 'BOOLEAN':
      if (typeof value === 'boolean') return value;
      if (typeof value === 'string') {
        const lowered = value.trim().toLowerCase();
        if (lowered === 'true') return true;
        if (lowered === 'false') return false;
      }
      return null;
    case 'DATE':
      return typeof value === 'string' && parseDateDays(value) !== null ? value : null;
    case 'TIMESTAMPTZ':
      return typeof value === 'string' ? storableInstant(canonicalInstant(value)) : null;
  }
}

/** DuckDB's last TIMESTAMPTZ microsecond, canonical (`microsToIso`). */
const LAST_STORABLE_INSTANT = '294247-01-10T04:00:54.775806Z';

/**
 * A canonical instant a TIMESTAMPTZ column holds, or null: from year 0000 in UTC (an offset can move a date of year
 * 0000 before it, which `microsToIso` writes `00-1-…`) to DuckDB's last microsecond. Either outside failed the
 * whole batch's commit, for good. Pure.
 */
function storableInstant(instant: string | null): string | null {
  if (instant === null) return null;
  switch (instant.length) {
    case 27: // years 0000–9999
      return instant.charCodeAt(2) === 45 || instant.charCodeAt(3) === 45 ? null : instant;
    case 28: // years 10000–99999
      return instant;
    default: // six digits: compared as text, width for width
      return instant.length === LAST_STORABLE_INSTANT.length && instant <= LAST_STORABLE_INSTANT ? instant : null;
  }
}

/** The staging columns of a record table, in table order: envelope, properties, then system columns. */
export function recordColumns(plan: readonly ColumnPlan[]): StageColumn[] {
  return [
    { name: 'id', sqlType: 'VARCHAR' },
    { name: 'created_at', sqlType: 'TIMESTAMPTZ' },
    { name: 'updated_at', sqlType: 'TIMESTAMPTZ' },
    ...plan.map((p) => ({ name: p.columnName, sqlType: p.sqlType as SqlType })),
    { name: '_properties', sqlType: 'JSON', nested: true },
    { name: '_synced_at', sqlType: 'TIMESTAMPTZ' },
    { name: '_deleted_at', sqlType: 'TIMESTAMPTZ' },
    { name: '_content_hash', sqlType: 'VARCHAR' },
  ];
}

/** JSON with object keys sorted at every level: one text per value, whatever order the service sent. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const entries = Object.keys(value)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`);
  return `{${entries.join(',')}}`;
}

/**
 * What a record says, as one hash: raw properties (canonical JSON) and both timestamps as instants (an offset
 * change alone is not a change). A reconcile sweep compares it with the stored row's and writes only on a
 * difference, which also catches changes that never moved `updated_at` (links, predicted values). The batch
 * encoder (`recordEncoder`) builds the same text from its own pieces; this is the definition.
 */
export function contentHash(record: ServiceRecord): string {
  return hashOf(
    JSON.stringify(canonicalInstant(record.created_at) ?? record.created_at) ?? 'null',
    canonicalJson(record.properties),
    JSON.stringify(canonicalInstant(record.updated_at) ?? record.updated_at) ?? 'null',
  );
}

/** The hash of the text canonicalJson({ properties, created_at, updated_at }) gives, from its parts' JSON. */
function hashOf(createdAtJson: string, canonicalPropertiesJson: string, updatedAtJson: string): string {
  return hash('sha256', `{"created_at":${createdAtJson},"properties":${canonicalPropertiesJson},"updated_at":${updatedAtJson}}`, 'hex');
}

/** A staged cell, or the raw properties themselves (the `nested` column). */
export type RecordCell = CellValue | Readonly<Record<string, PropertyValue>>;

/** The cells before `_properties`: id, both timestamps and the property columns. */
function leadingCells(
  record: ServiceRecord,
  plan: readonly ColumnPlan[],
  createdAt: string | null,
  updatedAt: string | null,
): RecordCell[] {
  const cells: RecordCell[] = [record.id, createdAt, updatedAt];
  const properties = record.properties;
  for (const p of plan) {
    const value = Object.hasOwn(properties, p.apiName) ? properties[p.apiName] : undefined;
    cells.push(toColumnValue(value, p.sqlType as SqlType));
  }
  return cells;
}

/**
 * One record's cells in `recordColumns(plan)` order. `syncedAt` must already be canonical (one per batch).
 */
export function recordCells(record: ServiceRecord, plan: readonly ColumnPlan[], syncedAt: string): RecordCell[] {
  const createdAt = canonicalInstant(record.created_at);
  const updatedAt = canonicalInstant(record.updated_at);
  const cells = leadingCells(record, plan, createdAt, updatedAt);
  // `_properties` keeps the service's own order; the hash takes the canonical one.
  cells.push(record.properties, syncedAt, null, contentHash(record));
  return cells;
}

/**
 * A typed cell's JSON text: `toColumnValue`'s cell, from the value's own JSON (`valueJson`) when the value already
 * has its column's type, the usual case, which then costs no second serialization.
 */
function cellJson(value: PropertyValue, valueJson: string, sqlType: SqlType): string {
  switch (typeof value) {
    case 'string':
      if (sqlType === 'VARCHAR') return valueJson;
      if (sqlType === 'DATE') return parseDateDays(value) === null ? 'null' : valueJson;
      break;
    case 'number':
      // JSON numbers are finite: the text is the cell's.
      if (sqlType === 'DOUBLE') return valueJson;
      break;
    case 'boolean':
      if (sqlType === 'BOOLEAN') return valueJson;
      break;
  }
  return JSON.stringify(toColumnValue(value, sqlType));
}

/**
 * Records of a list share key lists: what each one costs (`KeyShape`) is worked out once per batch, found again by
 * walking its names (`ShapeNode`). Past this many names held, the shapes are forgotten and worked out anew.
 */
const KEY_SHAPE_NODES = 16_384;

/** A key list's texts and places, made once for every record of a batch that has it. */
interface KeyShape {
  /** Each name's JSON and colon, in the list's order, a comma before all but the first: `_properties`' keys. */
  rawKeys: string[];
  /** The positions of the names in sorted order: the canonical text's order. */
  order: number[];
  /** `rawKeys` of the names in sorted order, a comma before all but the first. */
  sortedKeys: string[];
  /** Each name's slot in the plan (its typed cell), or -1 for a name without a column. */
  slots: number[];
}

interface ShapeNode {
  next: Map<string, ShapeNode>;
  /** The shape of the key list that ends here. */
  shape?: KeyShape;
}

const shapeNode = (): ShapeNode => ({ next: new Map() });

/** Each of `names`' slot in `slotOf` (a plan's columns by API name), or -1. */
function slotsOf(names: readonly string[], slotOf: ReadonlyMap<string, number>): number[] {
  return names.map((name) => slotOf.get(name) ?? -1);
}

/**
 * Assembles NDJSON rows of `recordColumns(plan)`, for `upsertRecords`: `_properties` in the service's own order
 * (`raw`), each property value's JSON (`texts`, in `names` order, `slots` their plan slots) made once and used
 * twice, in the canonical text the hash takes and as the typed cell when the value has its column's type. Rows are
 * objects keyed `c0`, `c1`, … (`ndjsonKey`), the columns in order with `_properties` last (`read_json` matches keys
 * by name); no name from the service is a key.
 */
function lineAssembler(plan: readonly ColumnPlan[], syncedAt: string, keyLines = true) {
  const columns = recordColumns(plan);
  const key = columns.map((_, i) => `"${ndjsonKey(i)}":`);
  const at = (name: string) => key[columns.findIndex((c) => c.name === name)]!;
  const properties = at('_properties');
  const contentHash = at('_content_hash');
  const tail = `,${at('_synced_at')}${JSON.stringify(canonicalInstant(syncedAt) ?? syncedAt)},${at('_deleted_at')}null,${contentHash}`;
  // The plan's columns follow id, created_at and updated_at (`recordColumns`).
  const planKeys = key.slice(3, 3 + plan.length).map((k) => `,${k}`);
  // Reused record after record (a row is assembled at once): one array less for the collector per record.
  const cells: string[] = new Array<string>(plan.length);
  return (
    envelope: { idJson: string; createdJson: string; updatedJson: string; hash: string; raw: string },
    values: Readonly<Record<string, PropertyValue>>,
    names: readonly string[],
    texts: readonly string[],
    slots: readonly number[],
  ): EncodedRow => {
    cells.fill('null');
    for (let i = 0; i < names.length; i += 1) {
      const slot = slots[i]!;
      if (slot !== -1) cells[slot] = cellJson(values[names[i]!]!, texts[i]!, plan[slot]!.sqlType as SqlType);
    }
    let line = `{${key[0]}${envelope.idJson},${key[1]}${envelope.createdJson},${key[2]}${envelope.updatedJson}`;
    for (let i = 0; i < cells.length; i += 1) line += planKeys[i]! + cells[i]!;
    return {
      line: `${line}${tail}"${envelope.hash}",${properties}${envelope.raw}}`,
      key: keyLines ? `{${key[0]}${envelope.idJson},${key[2]}${envelope.updatedJson},${contentHash}"${envelope.hash}"}` : undefined,
    };
  };
}

/**
 * A record's NDJSON row, and its key line unless none was asked for: the same row's id, `updated_at` and content
 * hash under the same keys, all the writer needs to decide what to do with the row (`NdjsonRows.keyBytes`), read
 * without parsing the row.
 */
export interface EncodedRow {
  line: string;
  key: string | undefined;
}

/**
 * A record as an NDJSON row of `recordColumns(plan)` (see `lineAssembler`), with its key line unless `keyLines` is
 * false. `syncedAt` is an ISO instant; `updatedAtInstant`, when given, is `canonicalInstant(record.updated_at)`
 * already worked out by the caller.
 */
export function recordEncoder(
  plan: readonly ColumnPlan[],
  syncedAt: string,
  keyLines = true,
): (record: ServiceRecord, updatedAtInstant?: string | null) => EncodedRow {
  const assemble = lineAssembler(plan, syncedAt, keyLines);
  const slotOf = new Map(plan.map((p, i) => [p.apiName, i]));
  // Each key list met, name after name, leads to its shape: a walk of interned names, no text built per record.
  let shapes = shapeNode();
  let nodes = 0;
  const shapeOf = (names: readonly string[]): KeyShape => {
    if (nodes >= KEY_SHAPE_NODES) {
      shapes = shapeNode();
      nodes = 0;
    }
    let node = shapes;
    for (const name of names) {
      let next = node.next.get(name);
      if (next === undefined) {
        node.next.set(name, (next = shapeNode()));
        nodes += 1;
      }
      node = next;
    }
    if (node.shape === undefined) {
      const quoted = names.map((name) => `${JSON.stringify(name)}:`);
      const order = names.map((_, i) => i).sort((x, y) => (names[x]! < names[y]! ? -1 : names[x]! > names[y]! ? 1 : 0));
      node.shape = {
        rawKeys: quoted.map((text, i) => (i === 0 ? text : `,${text}`)),
        order,
        sortedKeys: order.map((position, j) => (j === 0 ? quoted[position]! : `,${quoted[position]!}`)),
        slots: slotsOf(names, slotOf),
      };
    }
    return node.shape;
  };
  return (record, updatedAtInstant) => {
    const values = record.properties;
    const names = Object.keys(values);
    const shape = shapeOf(names);
    const texts: string[] = new Array<string>(names.length);
    let nested = false;
    // `_properties` in the service's order, from the values' own texts: what JSON.stringify(values) gives a
    // parsed object, without serializing every value a second time.
    let raw = '{';
    for (let i = 0; i < names.length; i += 1) {
      const value = values[names[i]!]!;
      const text = JSON.stringify(value);
      texts[i] = text;
      raw += shape.rawKeys[i]! + text;
      if (value !== null && typeof value === 'object') nested = true;
    }
    raw += '}';
    let canonical: string;
    if (nested) {
      canonical = canonicalJson(values); // nested objects' keys are sorted too
    } else {
      const { order, sortedKeys } = shape;
      canonical = '{';
      for (let j = 0; j < order.length; j += 1) canonical += sortedKeys[j]! + texts[order[j]!]!;
      canonical += '}';
    }
    const createdAt = canonicalInstant(record.created_at);
    const updatedAt = updatedAtInstant === undefined ? canonicalInstant(record.updated_at) : updatedAtInstant;
    const createdJson = JSON.stringify(createdAt ?? record.created_at) ?? 'null';
    const updatedJson = JSON.stringify(updatedAt ?? record.updated_at) ?? 'null';
    const envelope = {
      idJson: JSON.stringify(record.id) ?? 'null',
      createdJson: createdAt === null ? 'null' : createdJson,
      updatedJson: updatedAt === null ? 'null' : updatedJson,
      hash: hashOf(createdJson, canonical, updatedJson),
      raw,
    };
    return assemble(envelope, values, names, texts, shape.slots);
  };
}

/**
 * Lines `recordEncoder(from, syncedAt)` made, as `recordEncoder(to, syncedAt)` makes them: only the typed cells
 * depend on the plan, and they come from the row's own `_properties`; the envelope, the hash and `_properties` are
 * kept as they are. For a batch encoded before its table's plan changed.
 */
export function reencodeRows(
  lines: Iterable<string>,
  from: readonly ColumnPlan[],
  to: readonly ColumnPlan[],
  syncedAt: string,
): NdjsonRows {
  const before = recordColumns(from).map((c) => c.name);
  const keyOf = (name: string) => ndjsonKey(before.indexOf(name));
  const [id, created, updated, properties, hash] = ['id', 'created_at', 'updated_at', '_properties', '_content_hash'].map(keyOf) as [
    string,
    string,
    string,
    string,
    string,
  ];
  const assemble = lineAssembler(to, syncedAt);
  const slotOf = new Map(to.map((p, i) => [p.apiName, i]));
  const out = new NdjsonRows();
  const ids: string[] = [];
  for (const line of lines) {
    const row = JSON.parse(line) as Record<string, unknown>;
    ids.push(row[id] as string);
    const values = row[properties] as Record<string, PropertyValue>;
    const names = Object.keys(values);
    const envelope = {
      idJson: JSON.stringify(row[id]),
      createdJson: JSON.stringify(row[created]),
      updatedJson: JSON.stringify(row[updated]),
      hash: row[hash] as string,
      raw: JSON.stringify(values),
    };
    out.pushEncoded(
      assemble(
        envelope,
        values,
        names,
        names.map((name) => JSON.stringify(values[name])),
        slotsOf(names, slotOf),
      ),
    );
  }
  out.ids = joinIds(ids);
  return out;
}

const EMPTY = Buffer.alloc(0);

/** Lines in one chunk of bytes. */
const LINES_PER_CHUNK = 64;
/** The open chunk's room to begin with (64 narrow lines fit). */
const OPEN_CHUNK_BYTES = 64 * 1024;

/**
 * Where a batch's sealed chunks go once it holds `bytes` of them (`NdjsonRows`): a file that becomes the batch's
 * stage file, so a batch that grows while the writer is busy costs disk, not memory.
 */
export interface SpillOptions {
  bytes: number;
  open: () => ChunkSpill;
}

/** A file NDJSON chunks are appended to (`openSpillFile`). */
export interface ChunkSpill {
  readonly path: string;
  /**
   * Append `chunks` in order, after those before them: queued, so a push never waits for the disk (the list may be
   * reused once this returns; its buffers must not change), then `written` once they are all in the file (never
   * after a failure). An earlier append's failure is thrown here, or by `finish`.
   */
  append(chunks: readonly Buffer[], written?: () => void): void;
  /** No more appends: once every one is written, the file is complete and its reader's to remove. */
  finish(): Promise<void>;
  /** Close and remove the file once the appends in flight are done (its batch was abandoned). Never rejects. */
  discard(): Promise<void>;
}

/** A spilled batch's file, complete, and the lines of it (0-based) that were dropped after they were spilled. */
export interface SpilledRows {
  path: string;
  droppedLines: number[];
}

/** Lines written as UTF-8 into one buffer that grows as they come, each ending in a newline. */
class LineBuffer {
  bytes = EMPTY;
  used = 0;

  write(line: string): void {
    // A UTF-16 code unit is at most 3 bytes of UTF-8, and the newline one more.
    const room = 3 * line.length + 1;
    if (this.used + room > this.bytes.length) {
      // Doubled at least: a buffer of wide lines moves a bounded number of times, not once every few lines.
      const larger = Buffer.allocUnsafe(Math.max(OPEN_CHUNK_BYTES, 2 * (this.used + room)));
      this.bytes.copy(larger, 0, 0, this.used);
      this.bytes = larger;
    }
    this.used += this.bytes.write(line, this.used, 'utf8');
    this.bytes[this.used++] = 0x0a;
  }

  /** Let go of the buffer. */
  clear(): void {
    this.bytes = EMPTY;
    this.used = 0;
  }
}

/**
 * Short lines gathered as UTF-8 bytes in one growing buffer, each found by where it ends: a batch's key lines
 * (`EncodedRow.key`), a tenth of its rows' bytes, held off the heap like them.
 */
class KeyLines {
  private readonly lines = new LineBuffer();
  private ends = new Uint32Array(0);
  private count = 0;

  push(line: string): void {
    this.lines.write(line);
    if (this.count === this.ends.length) {
      const larger = new Uint32Array(Math.max(LINES_PER_CHUNK, 2 * this.count));
      larger.set(this.ends);
      this.ends = larger;
    }
    this.ends[this.count++] = this.lines.used;
  }

  /** The lines but those at `dropped` (indexes in push order), as one buffer. */
  kept(dropped: ReadonlySet<number>): Buffer {
    const { bytes, used } = this.lines;
    if (dropped.size === 0) return bytes.subarray(0, used);
    const parts: Buffer[] = [];
    let start = 0;
    for (const index of [...dropped].sort((a, b) => a - b)) {
      parts.push(bytes.subarray(start, index === 0 ? 0 : this.ends[index - 1]));
      start = this.ends[index]!;
    }
    parts.push(bytes.subarray(start, used));
    return Buffer.concat(parts);
  }
}

/**
 * NDJSON rows gathered as UTF-8 bytes, a chunk every `LINES_PER_CHUNK` lines: a line's text dies young, where a
 * batch of strings kept until its commit would be copied by the collector from young to old space on the way.
 * Each line is written as UTF-8 straight into the open chunk as it comes (no text of the chunk's lines joined
 * first: one more copy of every line, in the heap), and a sealed chunk is copied out at its own size. A line may
 * be dropped after it was pushed (a later version of its record came in the same batch). With `spill`, sealed chunks
 * past `spill.bytes` go to a file (`spilledTo`), finished by `finishSpill` rather than read by `bytes`.
 */
export class NdjsonRows {
  private readonly chunks: Buffer[] = [];
  /**
   * The open chunk's lines so far, in a buffer reused chunk after chunk: it has room for the worst case of each
   * line (three bytes a character), and chunks kept as views of it would keep that room alive.
   */
  private readonly open = new LineBuffer();
  private openLines = 0;
  /** Where sealed chunks are carved from, and where each held one came from. */
  private readonly carver: ChunkCarver;
  private readonly chunkSources: ChunkSource[] = [];
  /** Indexes (in push order) of lines dropped, not yet cut out of their chunk. */
  private readonly dropped = new Set<number>();
  /**
   * The ids of the lines held, newline-joined (`joinIds`), when their encoder knew them: the writer then finds which
   * are stored without reading the rows back. Kept when the bytes are let go.
   */
  ids: string | undefined = undefined;
  /** Each line's key line (`EncodedRow.key`), by push index; null once a line came without one. */
  private keyLines: KeyLines | null = new KeyLines();
  /** Lines held. */
  rows = 0;
  /** Lines pushed, dropped ones included: the index the next line gets. */
  pushed = 0;
  /** The longest line, in UTF-16 code units (dropped ones included: a bound). */
  longestLine = 0;
  /** Set once the bytes are read: the rows are complete. */
  private read = false;
  /** Set once the bytes were let go (`release`). */
  private released = false;
  /** Bytes of the sealed chunks held in memory. */
  private sealedBytes = 0;
  private spill: ChunkSpill | null = null;
  /** Chunks appended to `spill`, each of exactly `LINES_PER_CHUNK` lines. */
  private spilledChunks = 0;
  private spillFinished = false;
  /** Why a spill failed: the rows are then in no state to be added to or written. */
  private spillError: unknown = undefined;

  constructor(
    private readonly spillOptions?: SpillOptions,
    slabs?: SlabPool,
  ) {
    this.carver = new ChunkCarver(slabs);
  }

  /** The file the first chunks went to, once the rows outgrew `spill.bytes`; else null. */
  get spilledTo(): string | null {
    return this.spill?.path ?? null;
  }

  /** Bytes held in memory: sealed chunks and the open one's lines. */
  get heldBytes(): number {
    return this.sealedBytes + this.open.used;
  }

  /** Add an encoded record's row and key line (`recordEncoder`). */
  pushEncoded(row: EncodedRow): void {
    this.push(row.line, row.key);
  }

  /** Add a line; `key`, its key line (`EncodedRow`): rows pushed without one have none (`keyBytes`). */
  push(line: string, key?: string): void {
    this.assertOpen();
    if (key === undefined) this.keyLines = null;
    else this.keyLines?.push(key);
    this.open.write(line);
    this.rows += 1;
    this.pushed += 1;
    if (line.length > this.longestLine) this.longestLine = line.length;
    if (++this.openLines >= LINES_PER_CHUNK) this.seal();
  }

  /** Drop the `index`-th line pushed. */
  drop(index: number): void {
    this.assertOpen();
    if (index < 0 || index >= this.pushed || this.dropped.has(index)) return;
    this.dropped.add(index);
    this.rows -= 1;
  }

  /**
   * The key lines of the lines held, in their order (those dropped left out), each ending in a newline; undefined
   * where a line came without one. Read before the rows are: until then a dropped line is known by its index.
   */
  keyBytes(): Buffer | undefined {
    this.assertOpen();
    return this.keyLines?.kept(this.dropped);
  }

  /**
   * Let go of the bytes once they are written elsewhere (a stage file): a batch waiting for the writer then holds
   * none in the process. The rows can be read no more. `written`: every chunk held is in that file (`bytes()` was
   * written whole), so their pool buffers may be reused; otherwise they are left to the collector.
   */
  release(written = false): void {
    // Its owner waits for the discard when it closes (the warehouse's spills).
    if (this.spill !== null && !this.spillFinished) void this.spill.discard();
    if (written) this.carver.written(this.chunkSources);
    this.chunkSources.length = 0;
    this.carver.retire();
    this.read = true;
    this.open.clear();
    this.chunks.length = 0;
    this.sealedBytes = 0;
    this.dropped.clear();
    this.keyLines = null;
    this.released = true;
  }

  /**
   * Complete the spill file with the lines still in memory (those dropped cut out) and hand it over: the lines
   * dropped after they were spilled are the caller's to leave out. The rows can be read no more.
   */
  async finishSpill(): Promise<SpilledRows> {
    this.assertSpillable();
    const spill = this.spill;
    if (spill === null || this.spillFinished) throw new Error('NdjsonRows: finishSpill without an open spill file');
    const spilledLines = this.spilledChunks * LINES_PER_CHUNK;
    const droppedLines = [...this.dropped].filter((index) => index < spilledLines).sort((a, b) => a - b);
    for (const index of droppedLines) this.dropped.delete(index);
    try {
      const held = this.heldChunks();
      const sources = [...this.chunkSources];
      spill.append(held, () => this.carver.written(sources));
    } catch (error) {
      // Still open: discarded when the rows are let go, or when their warehouse closes.
      this.spillError = error;
      throw error;
    }
    this.spillFinished = true;
    // Handed to the spill, whose write reports them written.
    this.chunkSources.length = 0;
    this.release();
    await spill.finish();
    return { path: spill.path, droppedLines };
  }

  /** Every line held, as bytes, each ending in a newline. */
  bytes(): readonly Buffer[] {
    this.assertSpillable();
    if (this.spill !== null) throw new Error('NdjsonRows: rows spilled to a file are read from it (finishSpill)');
    return this.heldChunks();
  }

  /** The chunks held in memory, sealed, their dropped lines cut out; the rows are read from then on. */
  private heldChunks(): Buffer[] {
    this.assertSpillable();
    if (this.released) throw new Error('NdjsonRows: the rows were read after their bytes were released');
    this.seal(false);
    this.read = true;
    this.open.clear();
    if (this.dropped.size > 0) {
      // Every chunk but the last holds exactly LINES_PER_CHUNK lines: a dropped line's chunk is known by its index.
      const byChunk = new Map<number, Set<number>>();
      for (const index of this.dropped) {
        const chunk = Math.floor(index / LINES_PER_CHUNK) - this.spilledChunks;
        if (!byChunk.has(chunk)) byChunk.set(chunk, new Set());
        byChunk.get(chunk)!.add(index % LINES_PER_CHUNK);
      }
      for (const [chunk, offsets] of byChunk) {
        // A line is JSON, which never holds a raw newline.
        const kept = this.chunks[chunk]!.toString('utf8')
          .split('\n')
          .slice(0, -1)
          .filter((_, i) => !offsets.has(i));
        this.chunks[chunk] = Buffer.from(kept.map((line) => `${line}\n`).join(''));
        // The chunk it replaces is never counted written: its buffer stays out of the pool.
        this.chunkSources[chunk] = null;
      }
      this.dropped.clear();
    }
    return this.chunks;
  }

  /** Every line held, as text without its newline. */
  *lines(): Generator<string> {
    for (const chunk of this.bytes()) {
      const text = chunk.toString('utf8');
      let start = 0;
      for (let end = text.indexOf('\n'); end !== -1; start = end + 1, end = text.indexOf('\n', start)) yield text.slice(start, end);
    }
  }

  private assertSpillable(): void {
    if (this.spillError !== undefined) throw this.spillError;
  }

  private assertOpen(): void {
    this.assertSpillable();
    // Chunks are cut every LINES_PER_CHUNK pushes until the bytes are read: a dropped line is found by that count.
    if (this.read) throw new Error('NdjsonRows: a line was pushed or dropped after the rows were read');
  }

  private seal(maySpill = true): void {
    if (this.openLines === 0) return;
    const { chunk, source } = this.carver.carve(this.open.used);
    this.open.bytes.copy(chunk, 0, 0, this.open.used);
    this.chunks.push(chunk);
    this.chunkSources.push(source);
    this.sealedBytes += chunk.length;
    this.open.used = 0;
    this.openLines = 0;
    // Only chunks sealed by a push go (each of exactly LINES_PER_CHUNK lines: a dropped line's chunk is known by its index).
    if (maySpill && this.spillOptions && this.sealedBytes >= this.spillOptions.bytes) {
      try {
        this.spill ??= this.spillOptions.open();
        const sources = [...this.chunkSources];
        this.spill.append(this.chunks, () => this.carver.written(sources));
      } catch (error) {
        // Part of the chunks may be in the file: neither it nor the chunks held are the rows any more.
        this.spillError = error;
        throw error;
      }
      this.spilledChunks += this.chunks.length;
      this.chunks.length = 0;
      this.chunkSources.length = 0;
      this.sealedBytes = 0;
    }
  }
}

/** Ids as `NdjsonRows.ids` holds them, or undefined where one holds a newline (an id from the service never does). */
export function joinIds(ids: Iterable<string>): string | undefined {
  const list = [...ids];
  return list.some((id) => id.includes('\n')) ? undefined : list.join('\n');
}

/** The (deduplicated) records as NDJSON rows (see `recordEncoder`). */
export function encodeRecords(records: readonly ServiceRecord[], plan: readonly ColumnPlan[], syncedAt: string): NdjsonRows {
  const encode = recordEncoder(plan, syncedAt);
  const rows = new NdjsonRows();
  for (const record of records) rows.pushEncoded(encode(record));
  rows.ids = joinIds(records.map((r) => r.id));
  return rows;
}

/** One record as a row keyed by column name (see `recordColumns`). `syncedAt` is an ISO instant. */
export function recordToRow(record: ServiceRecord, plan: readonly ColumnPlan[], syncedAt: string): StagedRow {
  // No prototype: a property may be named `__proto__`, and must land in the row like any other.
  const row: StagedRow = Object.create(null) as StagedRow;
  const cells = recordCells(record, plan, canonicalInstant(syncedAt) ?? syncedAt);
  recordColumns(plan).forEach((column, i) => {
    row[column.name] = cells[i];
  });
  return row;
}

/** The key of the `index`-th column in an NDJSON row: positional, so no column name (`__proto__`…) is ever a key. */
export function ndjsonKey(index: number): string {
  return `c${index}`;
}

/** A record's `updated_at`, canonical (`canonicalInstant`); a record without a valid one fails the batch. */
function updatedAtOf(record: ServiceRecord): string {
  const instant = typeof record.updated_at === 'string' ? canonicalInstant(record.updated_at) : null;
  if (instant === null) {
    throw new SalesyncError(
      'warehouse_invalid_record',
      `Record ${record.id} has an updated_at that is not an ISO 8601 date-time (${JSON.stringify(record.updated_at)}); nothing was written.`,
      { context: { id: record.id, updatedAt: record.updated_at } },
    );
  }
  return instant;
}

/** One record's place in time: its canonical instant and the text it came as. */
export interface Stamp {
  instant: string;
  text: string;
}

/** A record's `Stamp`; a record without a valid `updated_at` fails the batch (`warehouse_invalid_record`). */
export function stampOf(record: ServiceRecord): Stamp {
  return { instant: updatedAtOf(record), text: record.updated_at };
}

/** A canonical instant of years 0000–9999 (`YYYY-MM-DDTHH:MM:SS.ffffffZ`): instants that compare as text. */
export function isFixedWidth(instant: string): boolean {
  return instant.length === 27 && instant[4] === '-';
}

/**
 * Whether `a` is at or after `b`: as canonical text for years 0000–9999 (fixed width, the usual case), else
 * exactly from the texts they came as (an offset may carry an instant past 9999, which the text compare and the
 * 4-digit parse both misread).
 */
export function atOrAfter(a: Stamp, b: Stamp): boolean {
  if (isFixedWidth(a.instant) && isFixedWidth(b.instant)) return a.instant >= b.instant;
  return parseInstantMicros(a.text)! >= parseInstantMicros(b.text)!;
}

/**
 * A batch's dedupe rule, for a record of an id the batch already holds: whether the later one replaces it. The
 * latest `updated_at` wins, compared at full precision, a tie going to the later record (a later page saw it
 * later); with `observedWins` the later record always does (the last version observed is the truth: see
 * `PageBatch.observedWins`). `held` is asked for only when it decides. Pure.
 */
export function replacesHeld(later: Stamp, held: () => Stamp, observedWins: boolean): boolean {
  return observedWins || atOrAfter(later, held());
}

/**
 * One record per id, by the batch's rule (`replacesHeld`), each in the place its id first came. Every
 * `updated_at` is checked (`stampOf` throws for one that is not valid). Needed because an upsert with duplicate
 * keys silently keeps the first.
 */
export function dedupeBatch(records: readonly ServiceRecord[], observedWins: boolean): ServiceRecord[] {
  const kept = new Map<string, { record: ServiceRecord; stamp: Stamp }>();
  for (const record of records) {
    const stamp = stampOf(record);
    const seen = kept.get(record.id);
    if (!seen || replacesHeld(stamp, () => seen.stamp, observedWins)) kept.set(record.id, { record, stamp });
  }
  return [...kept.values()].map((entry) => entry.record);
}

export const SUMMARY_COLUMNS: readonly StageColumn[] = [
  { name: 'meeting_log_id', sqlType: 'VARCHAR' },
  { name: 'summary_type', sqlType: 'VARCHAR' },
  { name: 'result_type', sqlType: 'VARCHAR' },
  { name: 'text', sqlType: 'VARCHAR' },
  { name: 'selections', sqlType: SELECTIONS_TYPE },
  { name: 'reason', sqlType: 'VARCHAR' },
  { name: 'status', sqlType: 'VARCHAR' },
  { name: 'updated_at', sqlType: 'TIMESTAMPTZ' },
  { name: 'position', sqlType: 'INTEGER' },
];

/** A log's summaries as rows; `position` keeps the service's order. */
export function summaryRows(meetingLogId: string, summaries: readonly MeetingLogSummary[]): StagedRow[] {
  return summaries.map((s, position) => ({
    meeting_log_id: meetingLogId,
    summary_type: s.summary_type,
    result_type: s.result_type,
    text: s.text,
    selections: s.selections.map((sel) => ({ value: sel.value, level: sel.level, order: sel.order })),
    reason: s.reason,
    status: s.status,
    updated_at: typeof s.updated_at === 'string' ? canonicalInstant(s.updated_at) : null,
    position,
  }));
}
