/**
 * Issue 19: the published file is readable by the people SALESYNC_PUBLISH_MODE / SALESYNC_PUBLISH_GROUP name,
 * and a reader the file system refuses hears `warehouse_unreadable`, not "no warehouse". Runs the CLI as another
 * account (nobody), which needs root to switch to.
 */
import { spawn } from 'node:child_process';
import { chmodSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { CLI, cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

const SMALL = { deals: 30, companies: 10, contacts: 30, meetingLogs: 5, contactActivities: 10, users: 4 };
const NOBODY = 65534;
const asRoot = process.getuid?.() === 0;

let harness: Harness | undefined;
afterEach(async () => {
  await harness?.close();
  harness = undefined;
});

function queryAs(uid: number, env: Record<string, string>, sql: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'query', sql, '--json'], {
      env: { PATH: process.env.PATH ?? '', HOME: '/tmp', ...env },
      uid,
      gid: uid,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe.skipIf(!asRoot)('who may read the published warehouse', () => {
  it('another account is told warehouse_unreadable (permission denied) by default, and reads it once SALESYNC_PUBLISH_MODE lets it', async () => {
    harness = await startHarness({ seed: 1921, size: SMALL });
    const h = harness;
    // The directory holding WAREHOUSE_PATH is the operator's to open up; the writer's own stays 0700.
    chmodSync(h.dir, 0o755);
    expect((await runCli(['sync', 'users'], cliEnv(h))).code).toBe(0);

    const refused = await queryAs(NOBODY, cliEnv(h), 'SELECT count(*) AS n FROM users');
    expect(refused.code).not.toBe(0);
    expect(refused.stderr.trim()).toMatch(
      new RegExp(
        `^salesync: warehouse_unreadable: cannot read ${h.config.warehousePath.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} \\(permission denied\\)`,
      ),
    );
    expect(refused.stderr.trim().split('\n')).toHaveLength(1);

    h.sim.admin.updateRecord('deals', h.sim.admin.truth().records.deals[0]!.id, { name: 'for everyone' });
    expect((await runCli(['sync', 'deals'], cliEnv(h, { SALESYNC_PUBLISH_MODE: '0644' }))).code).toBe(0);
    const allowed = await queryAs(NOBODY, cliEnv(h), 'SELECT count(*)::INTEGER AS n FROM users');
    expect(allowed.code, allowed.stderr).toBe(0);
    expect(JSON.parse(allowed.stdout)).toEqual([{ n: SMALL.users }]);
    // The writer's file is not theirs to read, whatever the published mode.
    const writerRead = await queryAs(NOBODY, cliEnv(h, { WAREHOUSE_PATH: `${h.dir}/.salesync/warehouse.writer.duckdb` }), 'SELECT 1');
    expect(writerRead.stderr).toMatch(/warehouse_unreadable/);
  });
});
