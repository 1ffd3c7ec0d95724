import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { describe, expect, it } from 'vitest';
import { projectRoot } from '../src/core/paths.js';

const root = projectRoot(import.meta.url);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/** Top-level area (`src/api`, `jobs`, ...) of every relative import of every file under `area`. */
function importedAreas(area: string): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const file of sourceFiles(join(root, area))) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      const target = relative(root, resolve(dirname(file), match[1]!));
      const parts = target.split('/');
      const targetArea = parts[0] === 'src' ? `src/${parts[1]!.replace(/\.(js|ts)$/, '')}` : parts[0]!;
      if (targetArea === area) continue;
      const set = found.get(targetArea) ?? new Set<string>();
      set.add(relative(root, file));
      found.set(targetArea, set);
    }
  }
  return found;
}

const RULES: Record<string, string[]> = {
  // The three building blocks know nothing of each other, nor of who composes them.
  'src/api': ['src/core'],
  'src/limiter': ['src/core'],
  'src/warehouse': ['src/core'],
  'src/core': [],
  // Leases are a building block too: Redis and nothing of salesync but core.
  'src/lease': ['src/core'],
  // The simulator shares nothing with the client but the spec.
  'src/simulator': [],
  'src/sync': ['src/core', 'src/api', 'src/limiter', 'src/warehouse', 'src/config', 'src/logger'],
};

describe('architecture', () => {
  for (const [area, allowed] of Object.entries(RULES)) {
    it(`${area} imports only ${allowed.length ? allowed.join(', ') : 'itself'}`, () => {
      const offending = [...importedAreas(area)].filter(([target]) => !allowed.includes(target));
      expect(Object.fromEntries(offending.map(([target, files]) => [target, [...files]]))).toEqual({});
    });
  }
});
