import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync, writeSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openWarehouse } from '../../src/warehouse/index.js';
import { NdjsonRows } from '../../src/warehouse/rows.js';
import { SlabPool } from '../../src/warehouse/slab-pool.js';
import { currentProcessOwner } from '../../src/warehouse/runs.js';
import {
  openSpillFile,
  readStageLines,
  removeOrphanStageFiles,
  removeStageFile,
  unwritten,
  writeStageFile,
} from '../../src/warehouse/staging.js';

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

describe('a batch that spilled to its file', () => {
  const line = (i: number) => `{"c0":"${i} é"}`;

  it('ends in a private stage file of exactly the lines kept, those dropped after they spilled cut out', async () => {
    const rows = new NdjsonRows({ bytes: 1000, open: openSpillFile });
    for (let i = 0; i < 500; i += 1) rows.push(line(i));
    const spilledTo = rows.spilledTo!;
    expect(existsSync(spilledTo)).toBe(true);
    const dropped = [0, 63, 64, 300, 499];
    for (const i of dropped) rows.drop(i);
    const file = await writeStageFile(rows);
    try {
      expect(file.rows).toBe(495);
      expect(await readStageLines(file)).toEqual(
        Array.from({ length: 500 }, (_, i) => i)
          .filter((i) => !dropped.includes(i))
          .map(line),
      );
      expect(statSync(file.path).mode & 0o777).toBe(0o600);
      // Rewritten without the spilled lines dropped: the file they spilled to is gone.
      if (file.path !== spilledTo) expect(existsSync(spilledTo)).toBe(false);
    } finally {
      await removeStageFile(file);
    }
  });

  it('is its stage file as it stands when nothing spilled was dropped', async () => {
    const rows = new NdjsonRows({ bytes: 1000, open: openSpillFile });
    for (let i = 0; i < 300; i += 1) rows.push(line(i));
    rows.drop(299);
    const spilledTo = rows.spilledTo!;
    const file = await writeStageFile(rows);
    try {
      expect(file.path).toBe(spilledTo);
      expect(await readStageLines(file)).toEqual(Array.from({ length: 299 }, (_, i) => line(i)));
    } finally {
      await removeStageFile(file);
    }
  });
});

describe("a batch's key lines", () => {
  const line = (i: number) => `{"c0":"${i} é","c5":"${'x'.repeat(i % 7)}"}`;
  const key = (i: number) => `{"c0":"${i} é"}`;
  const keyLines = (path: string) => readFileSync(path, 'utf8').split('\n').slice(0, -1);

  it.each([
    ['held in memory', undefined],
    ['spilled, some dropped before the spill and some after', 1000],
  ])('%s, stay beside their rows line for line, the dropped ones cut from both, and go with the stage file', async (_, spillBytes) => {
    const rows = new NdjsonRows(spillBytes === undefined ? undefined : { bytes: spillBytes, open: openSpillFile });
    const dropped = [0, 5, 63, 64, 65, 200, 499];
    for (let i = 0; i < 500; i += 1) {
      rows.push(line(i), key(i));
      // Half dropped as soon as they came (before any spill), half at the end.
      if (i === 5 || i === 65) rows.drop(i);
    }
    for (const i of dropped) rows.drop(i);
    const file = await writeStageFile(rows);
    try {
      const kept = Array.from({ length: 500 }, (_, i) => i).filter((i) => !dropped.includes(i));
      expect(await readStageLines(file)).toEqual(kept.map(line));
      expect(keyLines(file.keysPath!)).toEqual(kept.map(key));
      expect(statSync(file.keysPath!).mode & 0o777).toBe(0o600);
    } finally {
      await removeStageFile(file);
    }
    expect(existsSync(file.path)).toBe(false);
    expect(existsSync(file.keysPath!)).toBe(false);
  });

  it('are none where a line came without one: the writer then reads what decides each row from the rows', async () => {
    const rows = new NdjsonRows();
    rows.push(line(1), key(1));
    rows.push(line(2));
    const file = await writeStageFile(rows);
    try {
      expect(file.keysPath).toBeUndefined();
    } finally {
      await removeStageFile(file);
    }
  });
});

describe('a spill file', () => {
  it('writes the appends in the order they came, none waited for, their lists free to reuse, and is complete once finished', async () => {
    const spill = openSpillFile();
    try {
      const appended = Array.from({ length: 200 }, (_, i) => [Buffer.from(`{"c0":${i}}\n`), Buffer.from(`{"c0":"${'é'.repeat(i)}"}\n`)]);
      // One list, refilled after each append, as a batch reuses its own.
      const list: Buffer[] = [];
      for (const chunks of appended) {
        list.push(...chunks);
        spill.append(list);
        list.length = 0;
      }
      await spill.finish();
      expect(readFileSync(spill.path, 'utf8')).toBe(appended.flat().join(''));
      expect(statSync(spill.path).mode & 0o777).toBe(0o600);
      expect(() => spill.append([Buffer.from('{}\n')])).toThrow(/after it was finished/);
    } finally {
      rmSync(spill.path, { force: true });
    }
  });

  it('that failed to write throws at the next append and at finish, writing nothing after the failure', async () => {
    const full = new Error('ENOSPC: no space left on device, write');
    let calls = 0;
    const spill = openSpillFile(async (fd, chunks) => {
      calls += 1;
      if (calls === 2) throw full;
      return { bytesWritten: writeSync(fd, chunks[0]!) };
    });
    try {
      spill.append([Buffer.from('{"c0":1}\n')]);
      spill.append([Buffer.from('{"c0":2}\n')]);
      spill.append([Buffer.from('{"c0":3}\n')]);
      // A full disk under a stage file is said to be the temporary directory's (`stageFileFailure`).
      const failure = { code: 'warehouse_disk_full', cause: full };
      await expect(spill.finish()).rejects.toMatchObject(failure);
      expect(() => spill.append([Buffer.from('{}\n')])).toThrow(expect.objectContaining(failure));
      expect(calls).toBe(2);
      expect(readFileSync(spill.path, 'utf8')).toBe('{"c0":1}\n');
    } finally {
      await spill.discard();
    }
    expect(existsSync(spill.path)).toBe(false);
  });

  it('discarded with appends in flight, is gone once the discard resolves', async () => {
    const spill = openSpillFile();
    for (let i = 0; i < 50; i += 1) spill.append([Buffer.alloc(64 * 1024, 0x61)]);
    await spill.discard();
    expect(existsSync(spill.path)).toBe(false);
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
    const host = hostname();
    const dead = `salesync-stage-${host}+${deadPid()}@1700000000000-${uuid}.ndjson`;
    // Named before the host was in the name: judged as this host's.
    const deadUnnamedHost = `salesync-stage-${deadPid()}@1700000000000-${uuid}.ndjson`;
    // This process's PID, another start: an earlier process that had the PID (a container restarted).
    const earlier = `salesync-stage-${host}+${process.pid}@1-${uuid}.ndjson`;
    const own = `salesync-stage-${host}+${currentProcessOwner().processId}-${uuid}.ndjson`;
    const running = `salesync-stage-${host}+${process.ppid}@1-${uuid}.ndjson`;
    const other = `salesync-stage-notes-${uuid}.ndjson`;
    for (const name of [dead, deadUnnamedHost, earlier, own, running, other]) writeFileSync(join(dir, name), '{}\n');
    expect((await removeOrphanStageFiles(dir)).sort()).toEqual([dead, deadUnnamedHost, earlier].sort());
    expect(readdirSync(dir).sort()).toEqual([own, running, other].sort());
  });

  it("keeps another host's, whose PIDs say nothing here (a temporary directory shared between containers)", async () => {
    // No process here has this PID, nor this one's PID with that start: both would be removed were they this host's.
    const elsewhere = [
      `salesync-stage-other-host.example+${deadPid()}@1700000000000-${uuid}.ndjson`,
      `salesync-stage-other-host.example+${process.pid}@1-${uuid}.ndjson`,
    ];
    for (const name of elsewhere) writeFileSync(join(dir, name), '{}\n');
    expect(await removeOrphanStageFiles(dir)).toEqual([]);
    expect(readdirSync(dir).sort()).toEqual([...elsewhere].sort());
  });

  it('names the files this process writes after its host and process', async () => {
    const rows = new NdjsonRows();
    rows.push('{"c0":"a"}');
    const file = await writeStageFile(rows);
    try {
      expect(basename(file.path).startsWith(`salesync-stage-${hostname()}+${currentProcessOwner().processId}-`)).toBe(true);
    } finally {
      await removeStageFile(file);
    }
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
    const orphan = join(tmpdir(), `salesync-stage-${hostname()}+${deadPid()}@1700000000000-${uuid}.ndjson`);
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

describe("a batch's chunks carved from a pool of buffers", () => {
  const line = (batch: string, i: number) => JSON.stringify({ batch, n: i, pad: 'é'.repeat(i % 11) });
  const lines = (batch: string, n: number) => Array.from({ length: n }, (_, i) => line(batch, i));

  it('go back to the pool once written to their stage file, and the next batch carved from them writes its own lines', async () => {
    const pool = new SlabPool(4096);
    const first = new NdjsonRows(undefined, pool);
    for (const l of lines('a', 300)) first.push(l);
    expect(pool.idle).toBe(0);
    const a = await writeStageFile(first);
    try {
      expect(pool.idle).toBeGreaterThan(1);
      const second = new NdjsonRows(undefined, pool);
      for (const l of lines('b', 300)) second.push(l);
      const b = await writeStageFile(second);
      try {
        expect(await readStageLines(a)).toEqual(lines('a', 300));
        expect(await readStageLines(b)).toEqual(lines('b', 300));
      } finally {
        await removeStageFile(b);
      }
    } finally {
      await removeStageFile(a);
    }
  });

  it('handed to a spill, go back only once its write completes: chunks carved meanwhile never overwrite them', async () => {
    const pool = new SlabPool(4096);
    const writes: Array<() => void> = [];
    // Each write waits until released by the test, as a slow disk would make it wait.
    const spill = openSpillFile(
      (fd, chunks) =>
        new Promise((resolve) => writes.push(() => resolve({ bytesWritten: chunks.reduce((n, c) => n + writeSync(fd, c), 0) }))),
    );
    try {
      const rows = new NdjsonRows({ bytes: 2000, open: () => spill }, pool);
      for (const l of lines('a', 600)) rows.push(l);
      expect(rows.spilledTo).toBe(spill.path);
      // Nothing written yet: no buffer is back, so another batch takes new ones.
      expect(pool.idle).toBe(0);
      const other = new NdjsonRows(undefined, pool);
      for (const l of lines('b', 600)) other.push(l);
      let settled = false;
      const finished = rows.finishSpill().finally(() => (settled = true));
      while (!settled) {
        writes.shift()?.();
        await new Promise((resolve) => setImmediate(resolve));
      }
      const { path } = await finished;
      expect(readFileSync(path, 'utf8').split('\n').slice(0, -1)).toEqual(lines('a', 600));
      expect(pool.idle).toBeGreaterThan(0);
      expect([...other.lines()]).toEqual(lines('b', 600));
    } finally {
      await spill.discard();
    }
  });

  it('shared by batches in flight at once, each spilling or not, with short and slow writes and dropped lines, stage exactly their own lines', async () => {
    // A fixed sequence of choices (a linear congruential generator), so a failure replays.
    let state = 7;
    const next = () => (state = (state * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    const turn = () => new Promise((resolve) => (next() < 0.5 ? setImmediate(resolve) : setTimeout(resolve, Math.floor(next() * 3))));
    const words = ['基幹システム刷新', 'データ分析', 'é', '😀', 'note: follow up'];
    const text = () => Array.from({ length: 1 + Math.floor(next() * 30) }, () => words[Math.floor(next() * words.length)]).join(' ');
    // A disk that answers late and sometimes writes only the first chunk of a call.
    const slowDisk = async (fd: number, chunks: readonly Buffer[]) => {
      await turn();
      const taken = next() < 0.3 ? chunks.slice(0, 1) : chunks;
      return { bytesWritten: taken.reduce((n, c) => n + writeSync(fd, c), 0) };
    };
    // Counts the buffers handed out again: which ones come back depends on how the batches' turns interleave (a
    // buffer whose chunk had a line dropped never does), so whether any is idle at one moment is chance.
    const pool = new (class extends SlabPool {
      reused = 0;
      override take(): Buffer {
        if (this.idle > 0) this.reused += 1;
        return super.take();
      }
    })(16 * 1024, 8);
    const batch = async (name: string): Promise<{ staged: string[]; kept: string[] }> => {
      const spill = next() < 0.6 ? { bytes: 2000 + Math.floor(next() * 30_000), open: () => openSpillFile(slowDisk) } : undefined;
      const rows = new NdjsonRows(spill, pool);
      const pushed: (string | null)[] = [];
      const count = 50 + Math.floor(next() * 600);
      for (let i = 0; i < count; i += 1) {
        const l = JSON.stringify({ batch: name, n: i, text: text() });
        pushed.push(l);
        rows.push(l);
        // A later version of an earlier record: its line dropped, spilled or not.
        if (i > 0 && next() < 0.05) {
          const dropped = Math.floor(next() * i);
          rows.drop(dropped);
          pushed[dropped] = null;
        }
        if (next() < 0.03) await turn();
      }
      const file = await writeStageFile(rows);
      try {
        return { staged: await readStageLines(file), kept: pushed.filter((l) => l !== null) };
      } finally {
        await removeStageFile(file);
      }
    };
    for (let round = 0; round < 12; round += 1) {
      for (const { staged, kept } of await Promise.all(['a', 'b', 'c', 'd'].map((b) => batch(`${round}${b}`))))
        expect(staged).toEqual(kept);
    }
    expect(pool.reused).toBeGreaterThan(0);
  });

  it('of a batch let go unwritten (abandoned) stay out of the pool', () => {
    const pool = new SlabPool(4096);
    const rows = new NdjsonRows(undefined, pool);
    for (const l of lines('a', 300)) rows.push(l);
    rows.release();
    expect(pool.idle).toBe(0);
  });
});
