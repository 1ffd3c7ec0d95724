/**
 * An API key pasted into the wrong setting, flag or config file entry is refused in one line that never quotes it
 * (nor its part after `sk_`): error lines are read by people and land in logs.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

const KEY = 'sk_WrongPlaceCanary4Tq8Zr2Xm6Vb0Nc3Lp7Hj1Gf5Ds9Ae';
let harness: Harness;
let dir: string;
beforeAll(async () => {
  harness = await startHarness({
    seed: 2301,
    size: { deals: 5, companies: 2, contacts: 2, meetingLogs: 1, contactActivities: 1, users: 1 },
  });
  dir = await mkdtemp(join(tmpdir(), 'salesync-key-'));
});
afterAll(async () => {
  await harness?.close();
  await rm(dir, { recursive: true, force: true });
});

async function configFile(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

describe('a key in the wrong place', () => {
  it('is refused without being quoted: settings, a config file (a value, a key, broken JSON), flags', async () => {
    const cases: Array<{ args: string[]; env: Record<string, string> }> = [
      { args: ['sync'], env: { SALESYNC_LOOKBACK: KEY } },
      { args: ['sync'], env: { SALESYNC_CONCURRENCY: KEY } },
      { args: ['sync'], env: { SALESYNC_CONFIG: await configFile('value.json', JSON.stringify({ SALESYNC_LOOKBACK: KEY })) } },
      { args: ['sync'], env: { SALESYNC_CONFIG: await configFile('key.json', JSON.stringify({ [KEY]: 1 })) } },
      { args: ['sync'], env: { SALESYNC_CONFIG: await configFile('broken.json', `{"SALES_API_KEY": ${KEY}}`) } },
      { args: ['backfill', 'deals', '--since', KEY], env: {} },
      { args: ['status', '--max-age', KEY], env: {} },
    ];
    for (const { args, env } of cases) {
      const run = await runCli(args, cliEnv(harness, env));
      const what = `${args.join(' ')} ${Object.keys(env).join(' ')}`;
      expect(run.code, `${what}: ${run.stderr}`).toBe(2);
      expect(run.stderr.trim().split('\n'), what).toHaveLength(1);
      for (const needle of [KEY, KEY.slice(3), KEY.slice(3, 12)]) {
        expect(run.stderr, what).not.toContain(needle);
        expect(run.stdout, what).not.toContain(needle);
      }
    }
  });
});
