/**
 * The API key must exist only in the environment and the Authorization header. After CLI runs with retries and
 * faults, failing runs (forbidden, revoked, invalid answers), a key pool with a rejected key and a run killed
 * mid-walk (leaving its WAL), the key and its secret part are searched for in everything salesync left behind:
 * stdout and stderr at LOG_LEVEL=trace, every table of the warehouse read back through SQL (sync_runs included),
 * and the raw bytes of the warehouse file, its WAL and the published snapshot. Zero hits.
 *
 * Error objects of every failure kind are searched in test/api/secrets.test.ts; the file's mode 0600 is tested in
 * test/warehouse/duckdb-warehouse.test.ts and the WAL's in test/warehouse/file-safety.test.ts (checked again here
 * on the files these runs left).
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PUBLISH_MODE, openWarehouse, writerPathFor } from '../../src/warehouse/index.js';
import { cliEnv, runCli, type CliRun } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

/** Distinctive keys: any hit of them (or of their part after `sk_`) is a leak, never a coincidence. */
const KEY = 'sk_LeakCanary7Qz3Xw9Rt5Vb1Nm8Kp2Hj6Gf4Ds0Ae1234';
const REJECTED = 'sk_RejectedCanary5Lm2Zx8Cv4Bn7Mq1Wr9Ty3Ui6Op0Aa';
const NEEDLES = [KEY, KEY.slice(3), REJECTED, REJECTED.slice(3)];

let harness: Harness | undefined;
afterAll(async () => harness?.close());

describe('the API key is nowhere salesync writes', () => {
  it('not in stdout, stderr, trace logs, any table, nor the bytes of the warehouse, its WAL or the snapshot', async () => {
    harness = await startHarness({
      seed: 601,
      size: { deals: 120, companies: 40, contacts: 150, meetingLogs: 8, contactActivities: 40, users: 5 },
    });
    const sim = harness.sim;
    sim.admin.addKey(KEY, 'read');
    const snapshotPath = join(harness.dir, 'snapshot.duckdb');
    const env = cliEnv(harness, {
      SALES_API_KEY: KEY,
      LOG_LEVEL: 'trace',
      SALES_API_RETRIES: '5',
      SALES_API_RETRY_DELAY: '5ms',
      WAREHOUSE_SNAPSHOT_PATH: snapshotPath,
    });
    const runs: CliRun[] = [];

    // Retries: a fifth of the answers faulted, of every kind that makes the client log and retry.
    sim.admin.setFaults({ errorRate: 0.06, resetRate: 0.04, malformedRate: 0.05, htmlErrorRate: 0.05, seed: 61 });
    runs.push(await runCli(['sync'], env));
    expect(runs.at(-1)!.code, runs.at(-1)!.stderr).toBe(0);
    sim.admin.clearFaults();

    // Failing runs: each error names the key by its fingerprint, never by itself.
    sim.admin.mutateRandom(10, 62, ['update', 'create']);
    sim.admin.failNext(100, 'forbidden', '/v1/companies/');
    runs.push(await runCli(['sync'], env));
    expect(runs.at(-1)!.stderr).toMatch(/^salesync: forbidden: /);
    sim.admin.clearFaults();
    sim.admin.failNext(100, 'malformed', '/v1/deals/');
    runs.push(await runCli(['sync'], { ...env, SALES_API_RETRIES: '1' }));
    expect(runs.at(-1)!.stderr).toMatch(/^salesync: invalid_response: /);
    sim.admin.clearFaults();
    sim.admin.revokeKey(KEY);
    runs.push(await runCli(['sync'], env));
    expect(runs.at(-1)!.stderr).toMatch(/^salesync: unauthorized: the service rejected the API key sk_…[0-9a-f]{8} /);
    sim.admin.addKey(KEY, 'read');

    // A pool in which the service rejects one key: warned about by fingerprint, dropped, the run succeeds.
    runs.push(await runCli(['sync'], { ...env, SALES_API_KEY: `${REJECTED},${KEY}` }));
    expect(runs.at(-1)!.code, runs.at(-1)!.stderr).toBe(0);
    expect(runs.at(-1)!.stdout).toContain('dropped from the key pool');

    // Killed mid-walk, so that the WAL with its uncheckpointed commits stays on disk to be searched.
    sim.admin.mutateRandom(40, 63, ['update', 'create', 'activity']);
    sim.admin.setFaults({ latencyMs: 15 });
    sim.admin.resetStats();
    runs.push(
      await runCli(['sync', '--full'], { ...env, SALESYNC_FLUSH_ROWS: '20' }, (kill) => {
        const timer = setInterval(() => {
          if ((sim.admin.stats().byRoute['GET /v1/contacts/'] ?? 0) >= 1) {
            clearInterval(timer);
            kill();
          }
        }, 2);
      }),
    );
    expect(runs.at(-1)!.signal).toBe('SIGKILL');
    sim.admin.clearFaults();

    const output = runs.map((r) => `${r.stdout}\n${r.stderr}`).join('\n');
    // The debug lines (salesync's most detailed; nothing logs at trace) really were there to search, and the
    // failures named the key the safe way.
    expect(output).toContain('"level":20');
    expect(output).toMatch(/sk_…[0-9a-f]{8}/);

    // The writer's own file and its WAL stay owner-only; the published copies are for analysts (0640).
    const writerPath = writerPathFor(harness.config.warehousePath);
    const walPath = `${writerPath}.wal`;
    const writerFiles = [writerPath, walPath].filter((p) => existsSync(p));
    expect(writerFiles).toContain(walPath);
    for (const file of writerFiles) expect(statSync(file).mode & 0o777, `${file} mode`).toBe(0o600);
    const published = [harness.config.warehousePath, snapshotPath].filter((p) => existsSync(p));
    expect(published).toContain(harness.config.warehousePath);
    for (const file of published) expect(statSync(file).mode & 0o777, `${file} mode`).toBe(DEFAULT_PUBLISH_MODE);
    const bytes = [...writerFiles, ...published].map((file) => ({ file, data: readFileSync(file) }));

    // Every table, read back as text (the file's columns may be compressed, so raw bytes alone could miss one).
    const reader = openWarehouse({ path: writerPath, lockTimeoutMs: 10_000, logger: pino({ level: 'silent' }) });
    const tables = await reader.query(`SELECT table_name FROM information_schema.tables WHERE table_type = 'BASE TABLE'`);
    const dumps: string[] = [];
    for (const { table_name } of tables) {
      const rows = await reader.query(`SELECT * FROM "${String(table_name)}"`);
      dumps.push(`${String(table_name)}: ${JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v))}`);
    }
    const runsTable = dumps.find((d) => d.startsWith('sync_runs:'))!;
    expect(runsTable).toMatch(/sk_…[0-9a-f]{8}/); // the failures are recorded, fingerprint and all

    for (const needle of NEEDLES) {
      expect(output, 'stdout/stderr').not.toContain(needle);
      for (const dump of dumps) expect(dump, dump.slice(0, dump.indexOf(':'))).not.toContain(needle);
      for (const { file, data } of bytes) expect(data.indexOf(needle), file).toBe(-1);
      expect(output).not.toMatch(/Bearer\s+sk_/);
    }
    // The byte search does see strings: the ids the runs wrote are in those bytes.
    const someId = sim.admin.truth().records.deals[0]!.id;
    expect(bytes.some(({ data }) => data.indexOf(someId) >= 0)).toBe(true);
  });
});
