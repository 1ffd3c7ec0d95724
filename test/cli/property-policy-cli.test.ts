/**
 * The property policy from the operator's side, through the built CLI: the configuration file's `properties`, the
 * secret from SALESYNC_HASH_KEY (a one-line config error without it), the purge's log line (names, never values),
 * and `status` showing the policy in force, as text and JSON.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/cli.js';
import { startHarness, type Harness } from '../support/harness.js';

const SECRET = 'cli-test-secret-0123456789abcdef';
let harness: Harness;
let configPath: string;

beforeAll(async () => {
  harness = await startHarness({
    seed: 4403,
    size: { deals: 5, companies: 3, contacts: 30, meetingLogs: 1, contactActivities: 2, users: 2 },
  });
  configPath = join(harness.dir, 'salesync.config.json');
});
afterAll(async () => {
  await harness?.close();
});

function writeConfig(value: unknown): void {
  writeFileSync(configPath, JSON.stringify(value));
}

const env = (extra: Record<string, string> = {}) => cliEnv(harness, { SALESYNC_CONFIG: configPath, ...extra });

describe('the property policy through the CLI', () => {
  it('a policy that hashes without SALESYNC_HASH_KEY stops a sync with one line naming the variable, exit 2', async () => {
    writeConfig({ properties: { contacts: { hash: ['phone'] } } });
    const run = await runCli(['sync', 'contacts'], env());
    expect(run.code).toBe(2);
    expect(run.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^salesync: missing_hash_key: SALESYNC_HASH_KEY is not set/)]);
  });

  it('a policy of the wrong shape is refused naming its key, exit 2', async () => {
    writeConfig({ properties: { contacts: { exclude: ['email', 'id'] } } });
    const run = await runCli(['status'], env());
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/invalid_property_policy: .*properties\.contacts\.exclude\[1\] names "id"/);
  });

  it('a change purges with one line naming the properties, never a value; status shows the policy in force', async () => {
    writeConfig({});
    expect((await runCli(['sync', 'contacts'], env())).code).toBe(0);
    writeConfig({ properties: { contacts: { exclude: ['email'], hash: ['phone'] } } });

    const pending = await runCli(['status', '--json'], env());
    const before = JSON.parse(pending.stdout) as { resources: { resource: string; propertyPolicy?: { applied: boolean } }[] };
    expect(before.resources.find((r) => r.resource === 'contacts')?.propertyPolicy?.applied).toBe(false);

    const run = await runCli(['sync', 'contacts'], env({ SALESYNC_HASH_KEY: SECRET, LOG_LEVEL: 'debug' }));
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout
      .split('\n')
      .filter((l) => l.includes('property policy changed'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toEqual([expect.objectContaining({ level: 30, resource: 'contacts', purged: ['email', 'phone'] })]);
    const emails = harness.sim.admin
      .truth()
      .records.contacts.map((c) => c.properties.email)
      .filter((e): e is string => typeof e === 'string');
    expect(emails.filter((e) => run.stdout.includes(e) || run.stderr.includes(e))).toEqual([]);
    expect(run.stdout + run.stderr).not.toContain(SECRET);

    const text = await runCli(['status'], env());
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain('contacts: exclude email; hash phone');
    const json = JSON.parse((await runCli(['status', '--json'], env())).stdout) as {
      resources: { resource: string; propertyPolicy?: unknown }[];
    };
    expect(json.resources.find((r) => r.resource === 'contacts')?.propertyPolicy).toEqual({
      summary: 'exclude email; hash phone',
      include: null,
      exclude: ['email'],
      hash: ['phone'],
      applied: true,
    });
    expect(json.resources.find((r) => r.resource === 'deals')?.propertyPolicy).toMatchObject({
      summary: 'all properties kept',
      applied: true,
    });
    expect(json.resources.find((r) => r.resource === 'users')?.propertyPolicy).toBeUndefined();
  });
});
