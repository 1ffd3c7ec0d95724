import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/index.js';
import { NdjsonRows } from '../../src/warehouse/rows.js';
import { currentProcessOwner } from '../../src/warehouse/runs.js';
import { readStageLines, removeOrphanStageFiles, removeStageFile, unwritten, writeStageFile } from '../../src/warehouse/staging.js';

const text = (chunks: readonly Buffer[]) => chunks.map((c) => c.toString());

describe('writing a stage file from its chunks', () => {
  const chunks = [Buffer.from('abc'), Buffer.from(''), Buffer.from('defg'), Buffer.from('hi')];

  it('after a short write, sends again exactly the bytes not written, in order', () => {
    expect(text(unwritten(chunks, 0))).toEqual(['abc', 'defg', 'hi']);
    expect(text(unwritten(chunks, 2))).toEqual(['c', 'defg', 'hi']);
    expect(text(unwritten(chunks, 3))).toEqual(['defg', 'hi']);
    expect(text(unwritten(chunks, 5))).toEqual(['fg', 'hi']);
    expect(text(unwritten(chunks, 8))).toEqual(['i']);
  });

  it('leaves nothing once every byte is written', () => {
    expect(unwritten(chunks, 9)).toEqual([]);
    expect(unwritten([Buffer.from('')], 0)).toEqual([]);
  });
});

describe('stage files left behind', () => {
  const uuid = '0b0e4a2c-5c2f-4f55-9b8e-3f1d7c2a9e61';
  // A PID no process has any more: a child that has exited.
  const deadPid = () => spawnSync(process.execPath, ['-e', '']).pid!;
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'salesync-orphans-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("removes those of processes no longer running, and keeps this process's, a running one's and other files", async () => {
    const dead = `salesync-stage-${deadPid()}@1700000000000-${uuid}.ndjson`;
    // This process's PID, another start: an earlier process that had the PID (a container restarted).
    const earlier = `salesync-stage-${process.pid}@1-${uuid}.ndjson`;
    const own = `salesync-stage-${currentProcessOwner().processId}-${uuid}.ndjson`;
    const running = `salesync-stage-${process.ppid}@1-${uuid}.ndjson`;
    const other = `salesync-stage-notes-${uuid}.ndjson`;
    for (const name of [dead, earlier, own, running, other]) writeFileSync(join(dir, name), '{}\n');
    expect((await removeOrphanStageFiles(dir)).sort()).toEqual([dead, earlier].sort());
    expect(readdirSync(dir).sort()).toEqual([own, running, other].sort());
  });

  it('keeps the stage files this process writes, read back line by line', async () => {
    const rows = new NdjsonRows();
    for (const line of ['{"c0":"a"}', '{"c0":"é"}']) rows.push(line);
    const file = await writeStageFile(rows);
    try {
      await removeOrphanStageFiles();
      expect(await readStageLines(file)).toEqual(['{"c0":"a"}', '{"c0":"é"}']);
    } finally {
      await removeStageFile(file);
    }
  });

  it("are removed by a writer's first call", async () => {
    const orphan = join(tmpdir(), `salesync-stage-${deadPid()}@1700000000000-${uuid}.ndjson`);
    writeFileSync(orphan, '{}\n');
    const warehouse = openWarehouse({ path: join(dir, 'w.duckdb') });
    try {
      await warehouse.ensureSchema();
      expect(existsSync(orphan)).toBe(false);
    } finally {
      await warehouse.close();
      rmSync(orphan, { force: true });
    }
  });
});
