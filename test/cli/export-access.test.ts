/**
 * `salesync export` writes the same sales data as the warehouse: owner-only by default, like the writer's file,
 * and as open as the published warehouse (SALESYNC_PUBLISH_MODE, SALESYNC_PUBLISH_GROUP) once the operator opened
 * that up. Runs the built CLI.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

let harness: Harness;
beforeAll(async () => {
  harness = await startHarness({
    seed: 3101,
    size: { deals: 5, companies: 2, contacts: 2, meetingLogs: 1, contactActivities: 1, users: 2 },
  });
  expect((await harness.sync({ resources: ['users', 'deals'] })).ok).toBe(true);
});
afterAll(async () => {
  await harness?.close();
});

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** Export into `<harness dir>/<name>/parquet` and return the modes of what it made. */
async function exportAs(name: string, extra: Record<string, string> = {}) {
  const parent = join(harness.dir, name);
  const out = join(parent, 'parquet');
  const run = await runCli(['export', '--out', out], cliEnv(harness, extra));
  expect(run.code, run.stderr).toBe(0);
  const files = readdirSync(out).map((f) => join(out, f));
  expect(files.length).toBeGreaterThan(0);
  return { parent, out, files };
}

describe('who may read `salesync export`', () => {
  it('by default: directories it creates 0700, files 0600', async () => {
    const { parent, out, files } = await exportAs('default');
    expect(modeOf(parent)).toBe('700');
    expect(modeOf(out)).toBe('700');
    for (const file of files) expect(modeOf(file), file).toBe('600');
  });

  it('SALESYNC_PUBLISH_MODE=0644: the same mode, and directories others can enter', async () => {
    const { out, files } = await exportAs('everyone', { SALESYNC_PUBLISH_MODE: '0644' });
    expect(modeOf(out)).toBe('755');
    for (const file of files) expect(modeOf(file), file).toBe('644');
  });

  // Handing a file to another group needs root (or membership of that group).
  it.skipIf(process.getuid?.() !== 0)('SALESYNC_PUBLISH_GROUP: that group, with the default mode 0640 (directories 0750)', async () => {
    const { out, files } = await exportAs('analysts', { SALESYNC_PUBLISH_GROUP: '65534' });
    expect(statSync(out).gid).toBe(65534);
    expect(modeOf(out)).toBe('750');
    for (const file of files) {
      expect(statSync(file).gid, file).toBe(65534);
      expect(modeOf(file), file).toBe('640');
    }
  });
});
