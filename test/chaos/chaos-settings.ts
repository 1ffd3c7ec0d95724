import { appendFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../src/core/paths.js';

/** Trials per chaos test: CHAOS_TRIALS, 20 by default; CI runs fewer to fit its time. */
export function chaosTrials(): number {
  const value = Number(process.env.CHAOS_TRIALS ?? '20');
  return Number.isInteger(value) && value > 0 ? value : 20;
}

/**
 * The trials a test whose failures name their trial runs: 0 to CHAOS_TRIALS - 1, or the one CHAOS_TRIAL names, alone
 * (`CHAOS_SEED=89100 CHAOS_TRIAL=18 npm run test:chaos -- unkind` replays trial 18 of that seed's set).
 */
export function chaosTrialNumbers(): number[] {
  const only = Number(process.env.CHAOS_TRIAL ?? Number.NaN);
  if (Number.isInteger(only) && only >= 0) return [only];
  return Array.from({ length: chaosTrials() }, (_, i) => i);
}

/**
 * The seed a chaos test draws its trials from: CHAOS_SEED, or the test's own. Another seed replays other draws
 * (e.g. `CHAOS_SEED=19100 npm run test:chaos -- unkind`).
 */
export function chaosSeed(own: number): number {
  const value = Number(process.env.CHAOS_SEED ?? own);
  return Number.isInteger(value) ? value : own;
}

/** A small seeded PRNG (mulberry32): the same seed replays the same kill moments. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One line per chaos test in bench/results/chaos.jsonl and on stdout: what was tried and what held. */
export function chaosReport(name: string, figures: Record<string, number | string>): void {
  const line = JSON.stringify({ name, at: new Date().toISOString(), ...figures });
  const dir = join(projectRoot(import.meta.url), 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  appendFileSync(join(dir, 'chaos.jsonl'), `${line}\n`);
  process.stdout.write(`chaos: ${line}\n`);
}
