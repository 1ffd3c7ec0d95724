/**
 * Issue 19: WAREHOUSE_PATH is the analysts' file. The writer works on its own file (`writerPathFor`) and publishes
 * consistent copies to WAREHOUSE_PATH, which no salesync process ever holds read-write. A reader holding it through
 * a whole sync, and another opening it every 100 ms: test/chaos/analysts-at-scale.chaos.test.ts.
 */
import { existsSync, statSync } from 'node:fs';
import { copyFile } from 'node:fs/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { DuckDBInstance } from '@duckdb/node-api';
import { pino } from 'pino';
import { RESOURCE_NAMES } from '../../src/core/resources.js';
import { runSync } from '../../src/sync/index.js';
import { createWarehouse } from '../../src/sync/environment.js';
import { openWarehouse, writerPathFor, type Warehouse } from '../../src/warehouse/index.js';
import { expectMirrorsTruth } from '../support/ground-truth.js';
import { startHarness, type Harness } from '../support/harness.js';

const SMALL = { deals: 120, companies: 40, contacts: 150, meetingLogs: 20, contactActivities: 60, users: 6 };
const silent = pino({ level: 'silent' });

let harness: Harness | undefined;
const readers: Warehouse[] = [];

afterEach(async () => {
  await Promise.all(readers.splice(0).map((r) => r.close()));
  await harness?.close();
  harness = undefined;
});

/** What an analyst's tool sees: the published file, READ_ONLY. */
function published(h: Harness): Warehouse {
  const reader = createWarehouse(h.config, silent);
  readers.push(reader);
  return reader;
}

function mode(path: string): number {
  return statSync(path).mode & 0o777;
}

describe('the published warehouse at WAREHOUSE_PATH', () => {
  it('after a run in which one resource failed, the resources that succeeded are published', async () => {
    harness = await startHarness({ seed: 1902, size: SMALL });
    const h = harness;
    expect((await h.sync()).ok).toBe(true);
    const contact = h.sim.admin.truth().records.contacts[0]!;
    const deal = h.sim.admin.truth().records.deals[0]!;
    h.sim.admin.updateRecord('contacts', contact.id, { first_name: 'Published Anyway' });
    h.sim.admin.updateRecord('deals', deal.id, { name: 'Held back by its own failure' });
    h.sim.admin.failNext(10_000, 'error500', '/v1/deals');

    const report = await h.sync({ config: { retryLimit: 0 } });
    expect(report.ok).toBe(false);
    expect(report.results.find((r) => r.resource === 'deals')?.outcome).toBe('failed');

    const reader = published(h);
    expect(await reader.query(`SELECT _properties->>'first_name' AS v FROM contacts WHERE id = '${contact.id}'`)).toEqual([
      { v: 'Published Anyway' },
    ]);
    await expectMirrorsTruth(reader, h.sim, { resources: ['contacts', 'companies', 'meeting-logs', 'contact-activities'] });
    // The failed run is published too: status read from WAREHOUSE_PATH tells the truth about it.
    const runs = await reader.recentRuns(20);
    expect(runs.find((r) => r.resource === 'deals')?.outcome).toBe('failed');
  });

  it('publishes nothing when nothing changed since the last publish, and once when a run wrote', async () => {
    harness = await startHarness({ seed: 1903, size: SMALL });
    const h = harness;
    expect((await h.sync()).ok).toBe(true);
    const before = statSync(h.config.warehousePath).ino;
    const env = h.env();
    // Nothing written by this handle: no publish.
    expect(await env.warehouse.publish()).toBeNull();
    await env.close();
    expect(statSync(h.config.warehousePath).ino).toBe(before);
    // A run writes (its sync_runs rows at least): the sync ends published, and a second publish has nothing to do.
    const report = await h.sync({ resources: ['users'] });
    expect(report.ok).toBe(true);
    expect(report.published?.path).toBe(h.config.warehousePath);
    const after = statSync(h.config.warehousePath).ino;
    expect(after).not.toBe(before);
    const again = h.env();
    expect(await again.warehouse.publish()).toBeNull();
    await again.close();
    expect(statSync(h.config.warehousePath).ino).toBe(after);
  });

  it('the published file has SALESYNC_PUBLISH_MODE and group; the writer file stays 0600 in a 0700 directory', async () => {
    harness = await startHarness({ seed: 1904, size: SMALL });
    const h = harness;
    const gid = process.getgid!();
    expect((await h.sync({ config: { publishMode: 0o644, publishGroup: String(gid) } })).ok).toBe(true);
    const writer = writerPathFor(h.config.warehousePath);
    expect(mode(h.config.warehousePath)).toBe(0o644);
    expect(statSync(h.config.warehousePath).gid).toBe(gid);
    expect(mode(writer)).toBe(0o600);
    expect(mode(writer.slice(0, writer.lastIndexOf('/')))).toBe(0o700);
    // The default is 0640.
    h.sim.admin.updateRecord('deals', h.sim.admin.truth().records.deals[0]!.id, { name: 'again' });
    expect((await h.sync({ resources: ['deals'] })).ok).toBe(true);
    expect(mode(h.config.warehousePath)).toBe(0o640);
  });
});

describe('upgrading from a release whose writer held WAREHOUSE_PATH', () => {
  /** A warehouse as today's main wrote it: a sync straight into WAREHOUSE_PATH, no writer's file. */
  async function oldReleaseSync(h: Harness): Promise<void> {
    const env = h.env();
    const old = openWarehouse({ path: h.config.warehousePath, lockTimeoutMs: 5000, logger: silent });
    try {
      const report = await runSync({ ...env.deps, warehouse: old }, env.settings, {
        resources: RESOURCE_NAMES,
        mode: 'incremental',
        concurrency: 3,
      });
      expect(report.ok).toBe(true);
    } finally {
      await old.close();
      await env.close();
    }
  }

  it('takes the old file over as the writer file with its state, runs and history, syncs incrementally, and publishes it back', async () => {
    harness = await startHarness({ seed: 1905, size: SMALL });
    const h = harness;
    await oldReleaseSync(h);
    const writer = writerPathFor(h.config.warehousePath);
    expect(existsSync(writer)).toBe(false);
    const old = openWarehouse({ path: h.config.warehousePath, logger: silent });
    const oldRuns = await old.recentRuns(50);
    const oldState = await old.readState('deals');
    await old.close();
    expect(oldState.watermark).not.toBeNull();

    const deal = h.sim.admin.truth().records.deals[0]!;
    h.sim.admin.updateRecord('deals', deal.id, { name: 'changed after the upgrade' });
    const report = await h.sync();
    expect(report.ok).toBe(true);
    expect(existsSync(writer)).toBe(true);
    // Incremental: the old watermark held, so only what changed was written (no full resync).
    const deals = report.results.find((r) => r.resource === 'deals')!;
    expect(deals.mode).toBe('incremental');
    expect(deals.written).toBeLessThan(SMALL.deals);

    const reader = published(h);
    const runs = await reader.recentRuns(100);
    for (const run of oldRuns) expect(runs.map((r) => r.runId)).toContain(run.runId);
    expect(runs.length).toBeGreaterThan(oldRuns.length);
    const history = await reader.query(`SELECT count(*)::INTEGER AS n FROM deals_history WHERE id = '${deal.id}'`);
    expect(history).toEqual([{ n: 2 }]);
    await expectMirrorsTruth(reader, h.sim);
  });

  it('takes over an old file whose writer was killed with commits still in its WAL, and loses none of them', async () => {
    harness = await startHarness({ seed: 1906, size: SMALL });
    const h = harness;
    await oldReleaseSync(h);
    // The old writer commits a change and is "killed" before any checkpoint: the file plus its WAL are what is left.
    const instance = await DuckDBInstance.create(h.config.warehousePath);
    const connection = await instance.connect();
    await connection.run("SET checkpoint_threshold = '1GB'");
    await connection.run(
      `INSERT INTO sync_runs (run_id, resource, mode, started_at, outcome) SELECT 'from-the-wal', 'deals', 'incremental', now(), 'succeeded'`,
    );
    const crashDir = `${h.dir}/crash`;
    await import('node:fs/promises').then((fs) => fs.mkdir(crashDir));
    await copyFile(h.config.warehousePath, `${crashDir}/w.duckdb`);
    await copyFile(`${h.config.warehousePath}.wal`, `${crashDir}/w.duckdb.wal`);
    connection.closeSync();
    instance.closeSync();
    await copyFile(`${crashDir}/w.duckdb`, h.config.warehousePath);
    await copyFile(`${crashDir}/w.duckdb.wal`, `${h.config.warehousePath}.wal`);

    const report = await h.sync();
    expect(report.ok).toBe(true);
    // Published back without the WAL; the WAL's commit is in it.
    expect(existsSync(`${h.config.warehousePath}.wal`)).toBe(false);
    const reader = published(h);
    expect(await reader.query(`SELECT run_id FROM sync_runs WHERE run_id = 'from-the-wal'`)).toEqual([{ run_id: 'from-the-wal' }]);
    await expectMirrorsTruth(reader, h.sim);
  });
});
