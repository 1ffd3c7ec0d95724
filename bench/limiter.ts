/**
 * How close the limiter gets to a limit without crossing it: the simulator at `--limit` requests/min per key,
 * hammered by 1 process (in-process bucket), by 3 processes sharing one key through Redis (the Lua GCRA), and
 * by 1 process with a pool of 3 keys against an organization limit of 2 × `--limit` (the org binds). Then the
 * lanes, through Redis on one key: a backfill alone (it may use the whole budget, not only its share), and a
 * sync process beside a backfill process, both flat out (the sync keeps at least 1 − the backfill's share).
 * `npm run bench` runs the same scenarios as its `limiter` section.
 *
 *   npm run bench:limiter -- [--limit 600] [--seconds 65] [--concurrency 8]
 *
 * Prints a table and writes bench/results/limiter.json. Redis: a private redis-server when one is installed,
 * else REDIS_URL (keys under a unique prefix, removed afterwards).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { projectRoot } from '../src/core/paths.js';
import type { RateLane } from '../src/core/rate-limiter.js';
import { DEFAULT_LANE_SHARES } from '../src/limiter/index.js';
import { DEFAULT_KEYS, createSimulator } from '../src/simulator/index.js';
import { spawnLimiterWorker, type WorkerReport } from '../devtools/limiter-worker.js';
import { startTestRedis, type TestRedis } from '../devtools/redis-server.js';
import { summarizeWindow } from '../devtools/window-stats.js';

export interface Flags {
  limit: number;
  seconds: number;
  concurrency: number;
}

export interface LimiterBenchRow {
  processes: number;
  shared: 'in-process' | 'redis';
  keys: number;
  /** The limit measured against: the key's, or the organization's when a pool of keys is bounded by it. */
  limitPerMinute: number;
  seconds: number;
  requests: number;
  /** The lane of each process, when the run is about lanes (one process per entry); else every process is `sync`. */
  lanes?: RateLane[];
  /** The backfill lane's share in a lanes run (SALESYNC_BACKFILL_SHARE). */
  backfillShare?: number;
  /** Steady rate (after the first 5 s) ÷ limit, all processes together. */
  rateRatio: number;
  /** In a lanes run: each lane's steady rate ÷ limit. */
  laneRateRatio?: Partial<Record<RateLane, number>>;
  /** Most requests in any 60 s window ÷ limit: above 1 would have been answered 429. */
  maxWindowRatio: number;
  /** 429s the simulator's rate limit answered. */
  rateLimited: number;
  failed: number;
}

function parseFlags(argv: string[]): Flags {
  const flags: Flags = { ...DEFAULT_LIMITER_FLAGS };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i]?.replace(/^--/, '') as keyof Flags | undefined;
    const value = Number(argv[i + 1]);
    if (!name || !(name in flags) || !(value > 0)) {
      throw new Error(`usage: limiter [--limit N] [--seconds N] [--concurrency N] (got ${argv.slice(i, i + 2).join(' ')})`);
    }
    flags[name] = value;
  }
  return flags;
}

async function scenario(
  flags: Flags,
  processes: number,
  redis: TestRedis | null,
  keyCount = 1,
  lanes?: RateLane[],
): Promise<LimiterBenchRow> {
  // One key: the org limit is far above the key's, so the key is what is measured. A pool: the org limit is
  // below the keys' sum, so the organization is.
  const pool = keyCount > 1;
  const orgLimit = pool ? flags.limit * 2 : Math.max(5000, flags.limit * 2);
  const measured = pool ? orgLimit : flags.limit;
  const keys = pool ? Array.from({ length: keyCount }, (_, i) => `sk_BenchPool${i}${'x'.repeat(40)}`) : [DEFAULT_KEYS.read];
  const sim = createSimulator({
    perKeyPerMinute: flags.limit,
    perOrgPerMinute: orgLimit,
    size: { deals: 20, companies: 5, contacts: 5, meetingLogs: 5, contactActivities: 5, users: 2 },
    ...(pool ? { keys: keys.map((key) => ({ key, role: 'read' as const })) } : {}),
  });
  const { url } = await sim.listen(0);
  try {
    const startAt = Date.now() + 1500;
    const stopAt = startAt + flags.seconds * 1000;
    // A prefix of its own per scenario: no bucket carries debt from one run into the next.
    const prefix = `${redis?.prefix ?? 'bench'}-${processes}${lanes ? `-${lanes.join('-')}` : ''}`;
    const reports: WorkerReport[] = await Promise.all(
      Array.from({ length: processes }, (_, i) =>
        spawnLimiterWorker({
          baseUrl: url,
          apiKeys: keys,
          redisUrl: redis?.url ?? null,
          prefix,
          perKeyPerMinute: flags.limit,
          perOrgPerMinute: orgLimit,
          startAt,
          stopAt,
          concurrency: flags.concurrency,
          ...(lanes ? { lane: lanes[i]! } : {}),
        }),
      ),
    );
    const grants = reports.flatMap((r) => r.grants);
    const summary = summarizeWindow(grants, measured, { startedAt: startAt, endedAt: stopAt });
    const laneRateRatio: Partial<Record<RateLane, number>> = {};
    for (const lane of new Set(lanes)) {
      const own = reports.filter((_, i) => lanes![i] === lane).flatMap((r) => r.grants);
      laneRateRatio[lane] = round(summarizeWindow(own, measured, { startedAt: startAt, endedAt: stopAt }).utilisation);
    }
    return {
      processes,
      shared: redis ? 'redis' : 'in-process',
      keys: keyCount,
      limitPerMinute: measured,
      seconds: flags.seconds,
      requests: summary.requests,
      ...(lanes ? { lanes, backfillShare: DEFAULT_LANE_SHARES.backfill, laneRateRatio } : {}),
      rateRatio: round(summary.utilisation),
      maxWindowRatio: round(summary.maxWindowRatio),
      rateLimited: sim.admin.stats().rateLimited,
      failed: reports.reduce((n, r) => n + Object.values(r.errors).reduce((a, b) => a + b, 0), 0),
    };
  } finally {
    await sim.close();
  }
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

function table(rows: LimiterBenchRow[]): string {
  const head = [
    'processes',
    'limiter',
    'keys',
    'lanes (rate/min ÷ limit)',
    'limit/min',
    'requests',
    'rate/min ÷ limit',
    'max 60 s ÷ limit',
    '429s',
    'failed',
  ];
  const body = rows.map((r) => [
    String(r.processes),
    r.shared,
    String(r.keys),
    describeLanes(r),
    String(r.limitPerMinute),
    String(r.requests),
    r.rateRatio.toFixed(3),
    r.maxWindowRatio.toFixed(3),
    String(r.rateLimited),
    String(r.failed),
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((row) => row[i]!.length)));
  return [head, ...body].map((row) => row.map((cell, i) => cell.padEnd(widths[i]!)).join('  ')).join('\n');
}

/** `sync 0.512 + backfill 0.471`: each lane's rate, or `sync` when the run is not about lanes. */
export function describeLanes(row: LimiterBenchRow): string {
  if (!row.lanes) return 'sync';
  return [...new Set(row.lanes)].map((lane) => `${lane} ${(row.laneRateRatio?.[lane] ?? 0).toFixed(3)}`).join(' + ');
}

/**
 * Every scenario: one process on one key, three processes sharing it through Redis, one pool of three keys; then,
 * through Redis on one key, a backfill alone and a sync beside a backfill (one process each).
 */
export async function benchLimiter(flags: Flags): Promise<LimiterBenchRow[]> {
  const rows: LimiterBenchRow[] = [await scenario(flags, 1, null)];
  const redis = await startTestRedis();
  try {
    rows.push(await scenario(flags, 3, redis));
    rows.push(await scenario(flags, 1, null, 3));
    rows.push(await scenario(flags, 1, redis, 1, ['backfill']));
    rows.push(await scenario(flags, 2, redis, 1, ['sync', 'backfill']));
  } finally {
    await redis.stop();
  }
  return rows;
}

export const DEFAULT_LIMITER_FLAGS: Flags = { limit: 600, seconds: 65, concurrency: 8 };

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  process.stdout.write(`limiter benchmark: ${flags.limit}/min per key, ${flags.seconds} s per scenario\n`);
  const rows = await benchLimiter(flags);
  process.stdout.write(`${table(rows)}\n`);
  const dir = join(projectRoot(import.meta.url), 'bench', 'results');
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'limiter.json'), `${JSON.stringify({ at: new Date().toISOString(), flags, rows }, null, 2)}\n`);
  process.stdout.write(`written to bench/results/limiter.json\n`);
}

// Run as a script (npm run bench:limiter), not when imported by bench/run.
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
    process.exitCode = 1;
  });
}
